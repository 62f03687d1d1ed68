#!/usr/bin/env bash
# What the libraries expose (issue 13, item 5):
#   - libggufmap.so exports exactly the functions the public headers declare
#     (all ggufmap_*), nothing else: no gm_*, no json_* (json_string would
#     collide with jansson's);
#   - no object of the library is writable global state (.data, .bss);
#   - nothing calls umask() (files are created 0666 under the umask);
#   - the release library and the ggufmap tool carry no test hook: the
#     names of the GGUFMAP_REPACK_TEST_* and GGUFMAP_TEST_* variables
#     appear nowhere in them,
#     while the test build (ggufmap-testhooks) has them (so this check can
#     fail).
#   symbols.sh INCLUDE_DIR LIBGGUFMAP_SO LIBGGUFMAP_A GGUFMAP GGUFMAP_TESTHOOKS
set -uo pipefail
inc=$1 so=$2 static=$3 tool=$4 hooks=$5
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

exported=$(nm -D --defined-only "$so" | awk '{ print $NF }' | sort -u)
others=$(grep -v '^ggufmap_' <<<"$exported")
[[ -z $others ]] && ok || bad "libggufmap.so exports symbols outside the API: $(tr '\n' ' ' <<<"$others")"
# Every ggufmap_ function the headers declare (comments stripped).
declared=$(for h in "$inc"/ggufmap/*.h; do gcc -fpreprocessed -dD -E -P "$h" 2>/dev/null; done |
           grep -oE '\bggufmap_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u)
n=$(wc -l <<<"$declared")
(( n > 100 )) && ok || bad "only $n functions found in the headers"
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[[ -z $missing ]] && ok || bad "declared but not exported (GGUFMAP_API missing?): $(tr '\n' ' ' <<<"$missing")"
extra=$(comm -13 <(echo "$declared") <(grep '^ggufmap_' <<<"$exported"))
[[ -z $extra ]] && ok || bad "exported but not declared in a public header: $(tr '\n' ' ' <<<"$extra")"
echo "libggufmap.so: $(wc -l <<<"$exported") symbols exported, $n functions declared"

# No mutable global state: no object of the library lives in a writable
# section (two threads calling it must not share anything).
writable=$(objdump -t "$static" | awk '$3 == "O" && $4 ~ /^\.(data|bss|data\.rel|data\.rel\.local|tdata|tbss)$/ { print $NF }')
[[ -z $writable ]] && ok || bad "writable globals in the library: $(tr '\n' ' ' <<<"$writable")"
n=$(objdump -t "$static" | awk '$3 == "O"' | wc -l)
(( n > 5 )) && ok || bad "objdump lists only $n objects: is the check able to fail?"

# Files are created with mode 0666 and the kernel applies the umask: nothing
# changes the process's umask (umask(0); umask(mask) raced other threads).
n=$(nm -u "$static" "$tool" 2>/dev/null | grep -c ' U umask$')
[[ $n == 0 ]] && ok || bad "the library or the tool calls umask ($n references)"

for f in "$so" "$static" "$tool"; do
  n=$(strings "$f" | grep -cE 'GGUFMAP_(REPACK_)?TEST_')
  [[ $n == 0 ]] && ok || bad "$f holds $n test hook name(s)"
done
n=$(strings "$hooks" | grep -cE 'GGUFMAP_(REPACK_)?TEST_')
[[ $n -ge 4 ]] && ok || bad "the test build holds $n test hook names, expected 4 (is the check able to fail?)"

echo "$passed passed, $failed failed"
(( failed == 0 && passed > 0 ))
