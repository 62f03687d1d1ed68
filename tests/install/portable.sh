#!/usr/bin/env bash
# The portability layer (src/os.h) is the only place that calls the
# system's own functions:
#   - every object of the library, the ggufmap tool and the fixture maker,
#     except os.c's, calls nothing of the system but what susv4.txt lists
#     (ISO C11 and SUSv4), libcrypto and the compiler's runtime (libcurl is
#     loaded on demand, through os.c), and none but os.c calls dlopen;
#   - os.c's object in a native Linux build does call Linux's own functions
#     (so this check can fail: they are there to be found), and in a
#     GGUFMAP_PORTABLE=posix build it calls only susv4.txt's too;
#   - no source file of src/ or tools/ but os.c names /proc, or a Linux or
#     macOS flag or function in its code (comments and strings stripped).
#   portable.sh SUSV4_LIST SOURCE_DIR MODE OBJECTS...
#     MODE is native or posix (CMake's GGUFMAP_PORTABLE); OBJECTS hold os.c's
set -uo pipefail
list=$1 src=$2 mode=$3
shift 3
objects=("$@")
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
os_object=""
for o in "${objects[@]}"; do [[ $(basename "$o") == os.c.o ]] && os_object=$o; done
[[ -n $os_object ]] || { echo "FAIL: no os.c.o among the ${#objects[@]} objects"; exit 1; }

allowed=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$' | sort -u)
(( $(wc -l <<<"$allowed") > 100 )) && ok || bad "$list lists only $(wc -l <<<"$allowed") names"

# Every symbol any of the objects defines: calls between them are ours.
ours=$(for o in "${objects[@]}"; do nm --defined-only "$o" | awk '{ print $NF }'; done | sort -u)

# glibc's spellings of standard names, back to the standard's; the names
# that are not the system's (our libraries', the compiler's) become empty.
normalize() {
  sed -E -e 's/^__isoc(99|23)_//' -e 's/^__(.*)_chk$/\1/' \
         -e 's/^__errno_location$/errno/' -e 's/^__ctype_(b|tolower|toupper)_loc$/ctype/' \
         -e '/^(EVP|OPENSSL|ERR)_/d' -e '/^curl_/d' \
         -e '/^(_GLOBAL_OFFSET_TABLE_|__stack_chk_fail|__cpu_model|__cpu_indicator_init|__tls_get_addr|__assert_fail|__dso_handle)$/d' \
         -e '/^__(asan|ubsan|sanitizer|lsan)_/d' -e '/^__atomic_/d'
}
# The system functions an object calls that the list does not allow.
foreign_calls() {
  nm -u "$1" | awk '{ print $NF }' | sort -u | comm -23 - <(echo "$ours") | normalize | while read -r s; do
    [[ -z $s ]] && continue
    grep -qxF "$s" <<<"$allowed" && continue
    [[ $s == *64 ]] && grep -qxF "${s%64}" <<<"$allowed" && continue # large-file aliases: open64 -> open
    echo "$s"
  done
}

n=0
for o in "${objects[@]}"; do
  [[ $o == "$os_object" ]] && continue
  n=$((n + 1))
  calls=$(foreign_calls "$o" | tr '\n' ' ')
  [[ -z $calls ]] && ok || bad "$(basename "$o") calls outside SUSv4 (put it behind src/os.h): $calls"
done
(( n > 50 )) && ok || bad "only $n objects checked: are the object lists right?"
# dlopen is POSIX, but which libraries load on demand is os.c's to say (the
# network stack: remote_curl.h): no other object opens a library
loaders=$(for o in "${objects[@]}"; do [[ $o == "$os_object" ]] && continue
  nm -u "$o" | awk '{ print $NF }' | grep -qxE 'dlopen|dlsym|dlmopen' && basename "$o"; done | tr '\n' ' ')
[[ -z $loaders ]] && ok || bad "objects other than os.c open libraries themselves: $loaders"
nm -u "$os_object" | awk '{ print $NF }' | grep -qx dlopen && ok || bad "os.c does not call dlopen: is the check able to fail?"
echo "$n objects call only what $(basename "$list") lists"

# os.c: the system's own calls in a native build, none in a posix build.
native=(renameat2 copy_file_range sync_file_range getrandom syscall fstatfs64)
os_calls=$(nm -u "$os_object" | awk '{ print $NF }')
if [[ $mode == native ]]; then
  for f in "${native[@]}"; do
    grep -qx "$f" <<<"$os_calls" && ok || bad "native build: os.c does not call $f (is GGUFMAP_PORTABLE=posix in force?)"
  done
else
  calls=$(foreign_calls "$os_object" | tr '\n' ' ')
  [[ -z $calls ]] && ok || bad "posix build: os.c calls outside SUSv4: $calls"
  for f in link fdatasync; do
    grep -qx "$f" <<<"$os_calls" && ok || bad "posix build: os.c does not call $f (its POSIX way)"
  done
fi
echo "os.c ($mode) calls: $(tr '\n' ' ' <<<"$os_calls")"

# The sources: code (comments and strings stripped) naming a system's own
# flag or function, or a string naming /proc, outside os.c.
words='renameat2|RENAME_NOREPLACE|renamex_np|RENAME_EXCL|copy_file_range|sync_file_range|SYNC_FILE_RANGE_[A-Z_]+|SEEK_DATA|SEEK_HOLE|getrandom|arc4random_buf|fstatfs|statfs|syscall|SYS_[a-z_]+|F_FULLFSYNC|MAP_ANONYMOUS|MAP_ANON|MAP_NORESERVE|MAP_POPULATE|O_DIRECT|O_TMPFILE|fallocate|mincore|madvise|task_info|proc_pid_rusage|pthread_cond_timedwait_relative_np|F_OFD_SETLK|flock|_GNU_SOURCE|_DARWIN_C_SOURCE|__linux__|__APPLE__'
hits=""
for f in "$src"/src/*.[ch] "$src"/tools/*.[ch] "$src"/tools/fixture/*.[ch]; do
  case $(basename "$f") in os.c|os.h) continue ;; esac
  code=$(gcc -fpreprocessed -dD -E -P "$f" 2>/dev/null)
  [[ -n $code ]] || { bad "cannot strip the comments of $f"; continue; }
  grep -q '"/proc/' <<<"$code" && hits+=" $(basename "$f"):/proc"
  w=$(sed -E 's/"([^"\\]|\\.)*"//g' <<<"$code" | grep -owE "$words" | sort -u | tr '\n' ',')
  [[ -n $w ]] && hits+=" $(basename "$f"):${w%,}"
done
[[ -z $hits ]] && ok || bad "outside src/os.c, the sources name the system's own calls:$hits"
# ... and the check finds them where they are
w=$(gcc -fpreprocessed -dD -E -P "$src/src/os.c" | sed -E 's/"([^"\\]|\\.)*"//g' | grep -owE "$words" | sort -u | wc -l)
(( w >= 10 )) && ok || bad "the source check finds only $w of the system's names in os.c: is it able to fail?"

echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
