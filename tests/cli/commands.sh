#!/usr/bin/env bash
# Every command as a new user meets it: exit statuses (0 done / same / fits,
# 1 usage, 2 bad input or I/O, 3 a negative answer), the messages of the
# shared parser, sizes with units, device names, conflicts, output that
# cannot be written, --quiet and --json everywhere, escaped metadata, verify's
# two values, repack's path checks and figures, and plan's next steps, each
# checked by running what it suggests.
#   commands.sh GGUFMAP FIXTURE_MAKER WORKDIR
set -uo pipefail
ggufmap=$(realpath "$1") fixture=$2 work=$3
. "$(dirname "$0")/lib.sh"
fx() { "$fixture" "$@" >/dev/null || bad "fixture maker: $*"; }
# json FILE EXPR: EXPR evaluated by node with j = the parsed FILE
json() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"; }

fx --arch llama --layers 4 --type f32 --move output.weight:first -o "$work/of.gguf"
fx --arch llama --layers 2 --shards 3 -o "$work/s.gguf"
m=$work/of.gguf

# ---- the commands about commands
expect 1 "no command" "$ggufmap"
for v in --version -V version; do
  expect 0 "$v" "$ggufmap" "$v"
  grep -qE '^ggufmap [0-9]+\.[0-9]+\.[0-9]+$' "$work/out" && ok || bad "$v prints $(cat "$work/out")"
done
expect 0 "help" "$ggufmap" help
has "$work/out" "exit status" "top-level help"
expect 1 "help of no such command" "$ggufmap" help frobnicate
for cmd in inspect plan repack hash verify load; do
  expect 0 "$cmd --help" "$ggufmap" "$cmd" --help
  cp "$work/out" "$work/help1"
  has "$work/help1" "usage: ggufmap $cmd" "$cmd --help"
  has "$work/help1" "exit status:" "$cmd --help"
  expect 0 "help $cmd" "$ggufmap" help "$cmd"
  cmp -s "$work/out" "$work/help1" && ok || bad "help $cmd differs from $cmd --help"
  expect 1 "$cmd --bogus" "$ggufmap" "$cmd" --bogus "$m"
  has "$work/err" "unknown option '--bogus'" "$cmd: unknown option"
done

# ---- the parser's messages
expect 1 "-ngl without a value" "$ggufmap" plan "$m" -ngl
has "$work/err" "-ngl needs a value" "missing value"
expect 1 "-o without a value" "$ggufmap" repack "$m" -o
has "$work/err" "-o needs a value" "missing value of a short option"
expect 1 "a flag given a value" "$ggufmap" plan "$m" --json=yes
has "$work/err" "--json takes no value" "flag with a value"
expect 1 "an ambiguous prefix" "$ggufmap" plan "$m" --p 4K
has "$work/err" "ambiguous" "ambiguous prefix"
expect 1 "verify with one model" "$ggufmap" verify "$m"
has "$work/err" "expected A B" "operand count"

# ---- sizes take a unit; pages are powers of two; contradictions are refused
expect 1 "--limit without a unit" "$ggufmap" plan "$m" --limit 96
has "$work/err" "a size needs a unit" "bare number"
expect 1 "--limit 0G" "$ggufmap" plan "$m" --limit 0G
expect 1 "--page 12K" "$ggufmap" plan "$m" --page 12K
has "$work/err" "not a power of two" "page"
expect 0 "--page 4K --max-buffer 0" "$ggufmap" plan "$m" --page 4K --max-buffer 0 --no-picture
expect 1 "--json with --format buffers" "$ggufmap" plan "$m" --json --format buffers
has "$work/err" "contradict" "--json vs --format"
expect 1 "--svg - with --json" "$ggufmap" plan "$m" --svg - --json

# ---- llama.cpp's device names mean what the kinds mean
for pair in "metal MTL0" "metal Metal" "cuda CUDA0" "cpu none"; do
  set -- $pair
  "$ggufmap" plan "$m" --device "$1" -ngl 2 --format buffers >"$work/a" 2>&1
  "$ggufmap" plan "$m" --device "$2" -ngl 2 --format buffers >"$work/b" 2>&1
  [[ -s $work/a ]] && cmp -s "$work/a" "$work/b" && ok || bad "--device $2 is not --device $1"
done
expect 0 "--device CUDA1" "$ggufmap" plan "$m" --device CUDA1 -ngl 2 --format buffers
has "$work/out" "buft=CUDA1 " "the second GPU's weights"
expect 1 "--device vulkan" "$ggufmap" plan "$m" --device Vulkan0
has "$work/err" "Vulkan is not modelled" "Vulkan's refusal"
expect 1 "--device cuda,metal" "$ggufmap" plan "$m" --device CUDA0,MTL0
has "$work/err" "one backend" "mixed backends"
expect 1 "-sm row on metal" "$ggufmap" plan "$m" --device metal -sm row
has "$work/err" "does not support split buffers" "Metal's split buffers"

# ---- plan: exit 3 over the limit, 0 under it; --quiet says it by status only
expect 3 "plan over the limit" "$ggufmap" plan "$m" --device metal -ngl 1 --limit 100K
expect 0 "plan under the limit" "$ggufmap" plan "$m" --device metal -ngl 1 --limit 1G
expect 3 "plan --quiet over the limit" "$ggufmap" plan "$m" --device metal -ngl 1 --limit 100K --quiet
[[ ! -s $work/out ]] && ok || bad "plan --quiet printed $(head -c 200 "$work/out")"
# sizes adapt (no 0.00 MiB outside llama.cpp's own lines); CPU-only wording
expect 0 "plan, no GPU" "$ggufmap" plan "$m" --no-picture
grep -v 'load_tensors:' "$work/out" | grep -q ' 0\.00 MiB' && bad "0.00 MiB in plan's text" || ok
lacks "$work/out" "working set (GPU buffers" "CPU-only plan"
has "$work/out" "memory (no GPU" "CPU-only plan"
# shards are numbered from 1, as their file names number them
expect 0 "plan of a split model" "$ggufmap" plan "$work/s-00002-of-00003.gguf" --device metal
has "$work/out" "shard 3 of 3  s-00003-of-00003.gguf" "picture's shard names"
grep -qE '#[0-9]+ +MTL0_Mapped +shard 3 ' "$work/out" && ok || bad "buffer rows do not number shards from 1"
grep -q 'shard 0' "$work/out" && bad "plan says 'shard 0'" || ok
expect 0 "inspect of a split model" "$ggufmap" inspect "$work/s-00001-of-00003.gguf"
awk '/^shards/ {s = 1; next} s && /^$/ {exit} s && NR > 0 && $1 ~ /^[0-9]+$/ {print $1}' "$work/out" | tr '\n' ' ' >"$work/ids"
[[ $(cat "$work/ids") == "1 2 3 " ]] && ok || bad "inspect's shard numbers: $(cat "$work/ids")"

# ---- plan's next steps, each checked by doing it
"$ggufmap" plan "$m" --device metal -ngl 1 --limit 100K --json >"$work/p.json"
[[ $(json "$work/p.json" 'j.suggestions.length > 0 && j.suggestions[0].command.startsWith("ggufmap repack ")') == true ]] &&
  ok || bad "no repack suggestion: $(json "$work/p.json" 'JSON.stringify(j.suggestions)')"
want=$(json "$work/p.json" 'j.suggestions[0].working_set')
cmdline=$(json "$work/p.json" 'j.suggestions[0].command')
(cd "$work" && eval "$ggufmap${cmdline#ggufmap}" >/dev/null 2>"$work/err") && ok || bad "the suggested repack failed: $cmdline: $(cat "$work/err")"
"$ggufmap" plan "$work/of-repacked.gguf" --device metal -ngl 1 --json >"$work/r.json" 2>/dev/null
[[ $(json "$work/r.json" 'j.working_set.llama') == "$want" ]] && ok || bad "repack suggestion said $want, the repacked model has $(json "$work/r.json" 'j.working_set.llama')"
# -ot: the suggested override gives the working set it promised, below llama.cpp's today
ot=$(json "$work/p.json" 'j.suggestions.filter(s => / -ot /.test(s.command)).map(s => s.working_set + "\t" + s.command)[0]')
if [[ -n $ot && $ot != undefined ]]; then
  (eval "$ggufmap${ot#*	ggufmap} --json" >"$work/ot.json" 2>/dev/null); st=$?
  [[ $(json "$work/ot.json" 'j.working_set.llama') == "${ot%%	*}" ]] && ok || bad "-ot suggestion: ${ot#*	} (exit $st) gives $(json "$work/ot.json" 'j.working_set.llama'), said ${ot%%	*}"
  (( ${ot%%	*} < $(json "$work/p.json" 'j.working_set.llama') )) && ok || bad "the -ot suggestion does not help"
else
  bad "no -ot suggestion: $(json "$work/p.json" 'JSON.stringify(j.suggestions)')"
fi
# -ngl: the most layers that fit, checked one above (on a model repacked for
# every -ngl, where more layers always need more)
fx --arch llama --layers 6 --type f32 -o "$work/d0.gguf"
"$ggufmap" repack "$work/d0.gguf" --order canonical -o "$work/d.gguf" --quiet || bad "repack for -ngl"
lim=$("$ggufmap" plan "$work/d.gguf" --device metal -ngl 3 --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).working_set.llama))')
"$ggufmap" plan "$work/d.gguf" --device metal --limit "${lim}B" --json >"$work/d.json"; st=$?
[[ $st == 3 ]] && ok || bad "plan -ngl all over a limit: exit $st"
ngl=$(json "$work/d.json" 'j.suggestions.map(s => s.command).filter(c => / -ngl \d+ /.test(c)).map(c => c.match(/ -ngl (\d+) /)[1])[0]')
if [[ $ngl =~ ^[0-9]+$ ]]; then
  expect 0 "the suggested -ngl $ngl fits" "$ggufmap" plan "$work/d.gguf" --device metal -ngl "$ngl" --limit "${lim}B" --quiet
  expect 3 "one layer more does not" "$ggufmap" plan "$work/d.gguf" --device metal -ngl $((ngl + 1)) --limit "${lim}B" --quiet
else
  bad "no -ngl suggestion: $(json "$work/d.json" 'JSON.stringify(j.suggestions)')"
fi
# --n-cpu-moe: the fewest layers whose experts go to the CPU, checked one below
fx --arch qwen3moe --layers 4 --type f32 -o "$work/e0.gguf"
"$ggufmap" repack "$work/e0.gguf" --order moe -o "$work/e.gguf" --quiet || bad "repack for --n-cpu-moe"
lim=$("$ggufmap" plan "$work/e.gguf" --device metal --n-cpu-moe 2 --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).working_set.llama))')
"$ggufmap" plan "$work/e.gguf" --device metal --limit "${lim}B" --json >"$work/e.json"
n=$(json "$work/e.json" 'j.suggestions.map(s => s.command).filter(c => /--n-cpu-moe \d+/.test(c)).map(c => c.match(/--n-cpu-moe (\d+)/)[1])[0]')
if [[ $n =~ ^[0-9]+$ ]]; then
  expect 0 "the suggested --n-cpu-moe $n fits" "$ggufmap" plan "$work/e.gguf" --device metal --n-cpu-moe "$n" --limit "${lim}B" --quiet
  if (( n > 1 )); then
    expect 3 "one layer fewer does not" "$ggufmap" plan "$work/e.gguf" --device metal --n-cpu-moe $((n - 1)) --limit "${lim}B" --quiet
  fi
else
  bad "no --n-cpu-moe suggestion: $(json "$work/e.json" 'JSON.stringify(j.suggestions)')"
fi

# ---- metadata from files is escaped; verify shows both values
gguf_kv "$work/n1.gguf" general.architecture=llama general.name=$'\e]0;pwned\a\e[31mRED\nFAKE\xe2\x80\xae' 'tok=[1,2,3]'
gguf_kv "$work/n2.gguf" general.architecture=llama general.name=plain 'tok=[1,2,3]'
gguf_kv "$work/n3.gguf" general.architecture=llama general.name=plain 'tok=[1,2,4]'
expect 0 "inspect a name with control bytes" "$ggufmap" inspect --metadata "$work/n1.gguf"
grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/out" && bad "a control byte reached the output" || ok
has "$work/out" 'name          \x1b]0;pwned\x07\x1b[31mRED\nFAKE\u202e' "escaped name"
expect 3 "verify: names differ" "$ggufmap" verify "$work/n1.gguf" "$work/n2.gguf"
has "$work/out" "key 'general.name': values differ: \"\\x1b]0;pwned" "first value"
has "$work/out" '" vs "plain"' "second value"
expect 3 "verify: arrays differ" "$ggufmap" verify "$work/n2.gguf" "$work/n3.gguf"
has "$work/out" "key 'tok': values differ: element 2: 3 vs 4" "array difference"
expect 3 "verify --quiet" "$ggufmap" verify --quiet "$work/n2.gguf" "$work/n3.gguf"
[[ ! -s $work/out ]] && ok || bad "verify --quiet printed"
expect 0 "verify same" "$ggufmap" verify "$m" "$m"
expect 2 "verify a missing file" "$ggufmap" verify "$m" "$work/none.gguf"
expect 3 "verify --json, differ" "$ggufmap" verify --json "$work/n2.gguf" "$work/n3.gguf"
[[ $(json "$work/out" 'j.schema + " " + j.same + " " + j.difference.startsWith("key")') == "ggufmap.verify/1 false true" ]] &&
  ok || bad "verify --json: $(cat "$work/out")"

# ---- hash --json equals the text lines
expect 0 "hash" "$ggufmap" hash "$work/s-00001-of-00003.gguf"
cp "$work/out" "$work/hash.txt"
expect 0 "hash --json" "$ggufmap" hash --json "$work/s-00001-of-00003.gguf"
d=$(awk '$1 == "digest" {print $2}' "$work/hash.txt")
[[ $(json "$work/out" 'j.schema + " " + j.digest') == "ggufmap.hash/1 $d" ]] && ok || bad "hash --json digest"
first=$(awk 'NR == 1 {print $2}' "$work/hash.txt")
[[ $(json "$work/out" 'j.tensors[0].sha256') == "$first" ]] && ok || bad "hash --json's first tensor"
expect 0 "hash --quiet" "$ggufmap" hash --quiet "$m"
[[ ! -s $work/out ]] && ok || bad "hash --quiet printed"

# ---- output that cannot be written: a message and exit 2, for every command
for args in "inspect $m" "plan $m" "hash $m" "verify $m $m" "repack $m --dry-run" "load $m" "help plan" "completion bash"; do
  # shellcheck disable=SC2086
  "$ggufmap" $args >/dev/full 2>"$work/err"; st=$?
  [[ $st == 2 ]] && grep -q "cannot write standard output" "$work/err" && ok || bad "$args > /dev/full: exit $st, $(cat "$work/err")"
done

# ---- repack: output paths checked before the analysis
mkdir -p "$work/o"
expect 1 "repack without -o" "$ggufmap" repack "$m"
expect 2 "repack into a missing directory" "$ggufmap" repack "$m" -o "$work/nodir/x.gguf"
has "$work/err" "the output directory $work/nodir does not exist" "missing directory"
[[ ! -s $work/out ]] && ok || bad "repack analysed before refusing the path: $(head -c 200 "$work/out")"
expect 2 "repack onto its input" "$ggufmap" repack "$m" -o "$m"
has "$work/err" "it is the input model" "input as output"
expect 2 "repack onto an input shard under another name" "$ggufmap" repack "$work/s-00001-of-00003.gguf" -o "$work/s.gguf"
has "$work/err" "it is the input model (shard 1)" "input shard as output"
expect 0 "repack --dry-run with a refused path" "$ggufmap" repack "$m" --dry-run -o "$work/nodir/x.gguf"
has "$work/err" "warning: the real run would refuse: the output directory" "dry-run warning"
# one file: OUT gets .gguf as a split name would
expect 0 "repack to a name without .gguf" "$ggufmap" repack "$m" --device metal -ngl 1 -o "$work/o/r"
[[ -f $work/o/r.gguf && ! -e $work/o/r ]] && ok || bad "single-file output name: $(ls "$work/o")"
has "$work/out" "free space needed" "the free-space figure"
has "$work/out" "margin" "the margin explained"
# figures: the GPU working set before and after are plan's, for the input and the output
expect 0 "repack --json" "$ggufmap" repack "$m" --device metal -ngl 1 --limit 100K -o "$work/o/j.gguf" --json
cp "$work/out" "$work/rj.json"
"$ggufmap" plan "$m" --device metal -ngl 1 --json >"$work/pin.json" 2>/dev/null
"$ggufmap" plan "$work/o/j.gguf" --device metal -ngl 1 --json >"$work/pout.json" 2>/dev/null
[[ $(json "$work/rj.json" 'j.cases[0].gpu_before') == "$(json "$work/pin.json" 'j.working_set.llama')" ]] && ok || bad "repack's GPU before is not plan's"
[[ $(json "$work/rj.json" 'j.cases[0].gpu_after') == "$(json "$work/pout.json" 'j.working_set.llama')" ]] && ok || bad "repack's GPU after is not plan's of the output"
[[ $(json "$work/rj.json" 'j.schema + " " + j.written + " " + j.cases[0].fits_after') == "ggufmap.repack/1 true true" ]] && ok || bad "repack --json: $(head -c 300 "$work/rj.json")"
expect 0 "repack --limit" "$ggufmap" repack "$m" --device metal -ngl 1 --limit 100K --dry-run
has "$work/out" "verdict under the limit of 100.00 KiB: after repacking 96.00 KiB FITS" "repack's verdict"
# a model that is already tight: nothing to gain, nothing written unless --force
expect 0 "repack a tight model" "$ggufmap" repack "$work/o/r.gguf" --device metal -ngl 1 -o "$work/o/t.gguf"
has "$work/out" "nothing to gain" "tight model"
[[ ! -e $work/o/t.gguf ]] && ok || bad "a tight model was written without --force"
expect 0 "repack a tight model --force" "$ggufmap" repack "$work/o/r.gguf" --device metal -ngl 1 -o "$work/o/t.gguf" --force
[[ -f $work/o/t.gguf ]] && ok || bad "--force wrote nothing"
expect 0 "repack --quiet" "$ggufmap" repack "$m" --device metal -ngl 1 -o "$work/o/q.gguf" --quiet
[[ ! -s $work/out && -f $work/o/q.gguf ]] && ok || bad "repack --quiet printed or wrote nothing"
# a directory that is not writable; a file system too small (the margin is named)
mnt=$work/ro
mkdir -p "$mnt"
if [[ $(id -u) != 0 ]]; then
  chmod 0555 "$mnt"
  expect 2 "repack into a read-only directory" "$ggufmap" repack "$m" -o "$mnt/x.gguf"
  has "$work/err" "is not writable" "read-only directory"
  chmod 0755 "$mnt"
elif mount -t tmpfs -o ro,size=1m tmpfs "$mnt" 2>"$work/err"; then
  expect 2 "repack into a read-only file system" "$ggufmap" repack "$m" -o "$mnt/x.gguf"
  has "$work/err" "is not writable" "read-only file system"
  umount "$mnt"
  mount -t tmpfs -o size=1m tmpfs "$mnt" && {
    expect 2 "repack onto a full file system" "$ggufmap" repack "$m" --device metal -ngl 1 -o "$mnt/x.gguf"
    has "$work/err" "margin" "the free-space message explains its margin"
    umount "$mnt"
  }
else
  bad "cannot mount a tmpfs (needs root): $(cat "$work/err")"
fi

# ---- load: --shard counts from 1; the ranges table has aligned columns
expect 1 "load --shard 0" "$ggufmap" load "$work/s-00001-of-00003.gguf" --shard 0
expect 0 "load --shard 3" "$ggufmap" load "$work/s-00001-of-00003.gguf" --shard 3 --device metal
has "$work/out" "shard 3 mapped" "load names the shard it maps"
expect 0 "load" "$ggufmap" load "$m" --device metal -ngl 1
awk '/^  buffer +shard/ {t = 1} t && /^tensors:/ {exit} t {print length($0)}' "$work/out" | sort -u >"$work/widths"
[[ $(wc -l <"$work/widths") == 1 ]] && ok || bad "load's table rows differ in width: $(tr '\n' ' ' <"$work/widths")"
expect 0 "load --quiet" "$ggufmap" load "$m" --quiet
[[ ! -s $work/out ]] && ok || bad "load --quiet printed"

summary
