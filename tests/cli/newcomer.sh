#!/usr/bin/env bash
# What a newcomer trips on (issue 21): one voice across commands.
#   - shards are numbered from 1 in every text (fit's "mapped from shard N");
#   - -ngl N without --device warns and names the flag probably meant;
#   - plan's answer comes first, in words, and agrees with its exit status;
#   - one unit policy: the column headed "llama.cpp" is llama.cpp's log
#     figure (%.2f of bytes/1024/1024, llama-model.cpp:1852), other sizes pick
#     their unit;
#   - the rest of item 6 (--max-ctx past n_ctx_train, exit statuses, likely
#     causes in errors, wording).
# Expected values come from arithmetic on plan --json (whose sizes the oracle
# tests check against llama.cpp) or from the files themselves.
#   newcomer.sh GGUFMAP FIXTURE_MAKER WORKDIR GGUFMAP_TESTHOOKS
set -uo pipefail
ggufmap=$(realpath "$1") fixture=$2 work=$3 hooks=$4
. "$(dirname "$0")/lib.sh"
fx() { "$fixture" "$@" >/dev/null || bad "fixture maker: $*"; }
json() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"; }

fx --arch qwen3moe --layers 4 --shards 2 -o "$work/q.gguf"
fx --arch llama --layers 4 --type f32 --move output.weight:first -o "$work/one.gguf"
q=$work/q-00001-of-00002.gguf one=$work/one.gguf

# ---- 1. shards from 1: fit names the second shard "shard 2", a single file "shard 1"
expect 0 "fit of a split model" "$ggufmap" fit "$q" --device metal -ngl 2 -c 512
has "$work/out" "mapped from shard 2" "fit: the second shard"
lacks "$work/out" "shard 0" "fit: no shard 0"
expect 0 "fit of one file" "$ggufmap" fit "$one" -c 512
has "$work/out" "mapped from shard 1" "fit: a single file is shard 1"
lacks "$work/out" "shard 0" "fit: no shard 0 for a single file"

# ---- 3. -ngl without --device
for cmd in plan fit; do
  if [[ $cmd == plan ]]; then expect 0 "plan -ngl 99 without --device" "$ggufmap" plan "$one" -ngl 99 --no-picture
  else expect 0 "fit -ngl 99 without --device" "$ggufmap" fit "$one" -ngl 99 -c 512; fi
  has "$work/err" "-ngl 99 without --device" "$cmd: the warning"
  has "$work/err" "--device metal" "$cmd: the flag probably meant"
  has "$work/err" "--device cuda" "$cmd: the flag probably meant"
done
expect 0 "plan -ngl 0" "$ggufmap" plan "$one" -ngl 0 --no-picture
lacks "$work/err" "without --device" "-ngl 0 warns"
expect 0 "plan --device metal -ngl 99" "$ggufmap" plan "$one" --device metal -ngl 99 --no-picture
lacks "$work/err" "without --device" "-ngl with --device warns"
expect 0 "plan --device cpu -ngl 99" "$ggufmap" plan "$one" --device cpu -ngl 99 --no-picture
lacks "$work/err" "without --device" "--device cpu given: the user asked for it"
expect 0 "plan -q -ngl 99" "$ggufmap" plan "$one" -ngl 99 -q
[[ ! -s $work/err ]] && ok || bad "--quiet still warns: $(cat "$work/err")"

# ---- 4. the answer first: before llama.cpp's lines, the buffers and the picture; it agrees with the exit status
answer_first() { # FILE: the line number of "answer:" is below every other section's
  local a l p
  a=$(grep -n '^answer: ' "$1" | head -1 | cut -d: -f1)
  l=$(grep -n '^llama.cpp v0.5.0 would print' "$1" | cut -d: -f1)
  p=$(grep -n '^picture' "$1" | cut -d: -f1)
  [[ -n $a && -n $l && -n $p && $a -lt $l && $a -lt $p && $a -le 5 ]] && ok || bad "answer at line ${a:-none} (llama.cpp ${l:-?}, picture ${p:-?})"
}
# working set under metal -ngl 2, from plan --json (llama.cpp's spans, page-aligned): the limits around it
"$ggufmap" plan "$q" --device metal -ngl 2 --limit 1G --json >"$work/p.json"
ws=$(json "$work/p.json" 'j.working_set.llama')
[[ $ws =~ ^[0-9]+$ ]] && ok || bad "plan --json working_set.llama: $ws"
expect 0 "plan under a limit" "$ggufmap" plan "$q" --device metal -ngl 2 --limit "$ws"B
answer_first "$work/out"
has "$work/out" "answer: FITS with llama.cpp v0.5.0 as it is" "the answer under the limit"
expect 3 "plan over a limit" "$ggufmap" plan "$q" --device metal -ngl 2 --limit "$((ws - 1))"B
answer_first "$work/out"
has "$work/out" "answer: DOES NOT FIT with llama.cpp v0.5.0 as it is" "the answer over the limit"
has "$work/out" "after next step 1 below: " "the answer after the suggested step"
expect 0 "plan without a limit" "$ggufmap" plan "$q" --device metal -ngl 2
has "$work/out" "answer: no verdict without --limit or --mem" "no verdict without a limit"
# with --mtp the answer judges both loads together, as the exit status does: once, on the first line
fx --arch glm4moe -o "$work/glm.gguf"
"$ggufmap" plan "$work/glm.gguf" --device metal --mtp --limit 1G --json >"$work/mtp.json"
both=$(json "$work/mtp.json" 'j.working_set.llama + j.mtp.working_set.llama')
one_load=$(json "$work/mtp.json" 'j.working_set.llama')
expect 3 "plan --mtp over a limit both loads exceed" "$ggufmap" plan "$work/glm.gguf" --device metal --mtp --limit "$((both - 1))B" --no-picture
[[ $(head -1 "$work/out") == "answer (both loads together): DOES NOT FIT"* ]] && ok || bad "--mtp answer: $(head -1 "$work/out")"
(( one_load <= both - 1 )) && ok || bad "the model's load alone exceeds the limit: the check above tests nothing"
[[ $(grep -c '^answer' "$work/out") == 1 ]] && ok || bad "--mtp: more than one answer"
# the tight loader's line says whose it is
has "$work/out" "ggufmap loader, tight" "the loader's line names ggufmap"
grep -qE '^  loader, ' "$work/out" && bad "a bare 'loader, ' line reads as llama.cpp's" || ok

# ---- 5. units: fit's "llama.cpp" column is llama.cpp's own log figure: %.2f of size/1048576
expect 0 "fit for the units" "$ggufmap" fit "$q" --device metal -ngl 2 -c 512
# llama.cpp's "%8.2f MiB" of size/1024.0/1024.0: printf rounds the exact value, half to even
node -e '
  const mib = (size) => { const n = BigInt(size) * 100n, d = 1048576n; let q = n / d; const r2 = (n % d) * 2n;
    if (r2 > d || (r2 === d && q % 2n === 1n)) q += 1n; return `${q / 100n}.${String(q % 100n).padStart(2, "0")} MiB`; };
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const want = p.buffers.map(b => mib(b.size)).join("|");
  const got = require("fs").readFileSync(process.argv[2], "utf8").split("\n").filter(l => /^  weights /.test(l))
    .map(l => l.trim().split(/ +/).slice(3, 5).join(" ")).join("|");
  if (got !== want) { console.log(`fit llama.cpp column ${got}, llama.cpp prints ${want}`); process.exit(1); }' \
  "$work/p.json" "$work/out" && ok || bad "fit's llama.cpp column"
has "$work/out" " KiB " "fit picks units (KiB)"
lacks "$work/out" "per device (MiB" "fit's table is not MiB-only"

# ---- 2. the family's order names every placement it makes worse; plan on the input and the output decides
expect 0 "family repack" "$ggufmap" repack "$q" -o "$work/fam.gguf" --json
cp "$work/out" "$work/fam.json"
# figures PLAN_ARGS...: "GPU CPU foreign" as plan --json counts them (llama.cpp's spans, checked against the oracle)
figures() { "$ggufmap" plan "$@" --limit 1T --json | node -e '
  let s = ""; process.stdin.on("data", d => s += d).on("end", () => { const j = JSON.parse(s); let f = 0;
    for (const b of j.buffers) if (b.mapped) f += b.foreign_bytes;
    console.log(`${j.working_set.llama} ${j.cpu_side.llama} ${f}`); });'; }
n_cases=$(json "$work/fam.json" 'j.cases.length')
worse_plan="" worse_repack=""
for ((k = 0; k < n_cases; k++)); do
  label=$(json "$work/fam.json" "j.cases[$k].label")
  read -r -a flags <<<"$label"
  read -r g0 c0 f0 <<<"$(figures "$q" --device metal "${flags[@]}")"
  read -r g1 c1 f1 <<<"$(figures "$work/fam-00001-of-00002.gguf" --device metal "${flags[@]}")"
  ((g1 > g0 || c1 > c0 || f1 > f0)) && worse_plan+="$label;"
  [[ $(json "$work/fam.json" "j.cases[$k].worse") == true ]] && worse_repack+="$label;"
done
[[ -n $worse_plan ]] && ok || bad "the fixture no longer has a placement the family makes worse: the check below tests nothing"
[[ $worse_plan == "$worse_repack" ]] && ok || bad "worse per plan: '$worse_plan', per repack: '$worse_repack'"
expect 0 "family repack, text" "$ggufmap" repack "$q" --dry-run
IFS=';' read -r -a worse_list <<<"$worse_plan"
for label in "${worse_list[@]}"; do
  grep -qE "^  $label: " "$work/out" && ok || bad "the worse placement '$label' is not named"
  grep -qE "^$label +.*WORSE$" "$work/out" && ok || bad "the row of '$label' is not marked WORSE"
done
lacks "$work/out" "where no tensor is on the GPU" "repack's legend"
# a placement given that gets worse: exit 3, nothing written; --force writes it, still exit 3
expect 3 "repack of a placement made worse" "$ggufmap" repack "$q" --device metal "${worse_list[0]%% *}" "${worse_list[0]#* }" --order moe -o "$work/w.gguf"
has "$work/err" "gets worse" "the refusal says why"
[[ ! -e $work/w-00001-of-00002.gguf ]] && ok || bad "the worse output was written"
expect 3 "repack --force of a placement made worse" "$ggufmap" repack "$q" --device metal "${worse_list[0]%% *}" "${worse_list[0]#* }" --order moe -o "$work/w.gguf" --force
[[ -e $work/w-00001-of-00002.gguf ]] && ok || bad "--force did not write"
expect 0 "repack of a placement, cpu-last" "$ggufmap" repack "$q" --device metal "${worse_list[0]%% *}" "${worse_list[0]#* }" -o "$work/c.gguf"
has "$work/out" "no placement gets worse" "cpu-last for the placement given"

# ---- 6. a context past the trained one: a note, as llama.cpp warns (llama-context.cpp:326)
train=$("$ggufmap" inspect --json "$one" | node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
  for (const kv of JSON.parse(s).metadata) if (kv.key === "llama.context_length") console.log(kv.value); });')
[[ $train =~ ^[0-9]+$ ]] && ok || bad "llama.context_length: '$train'"
expect 3 "fit --max-ctx past the trained context (-c 1048576 itself does not fit)" "$ggufmap" fit "$one" -c 1048576 --max-ctx --limit 1G
r=$(sed -n 's/^largest context that fits: -c \([0-9]*\).*/\1/p' "$work/out")
(( r > train )) && ok || bad "the answer $r is not past n_ctx_train $train: the note below tests nothing"
has "$work/out" "(-c $r) is past the model's trained context (llama.context_length = $train)" "the note names both"
has "$work/out" "n_ctx_seq ($r) > n_ctx_train ($train) -- possible training context overflow" "llama.cpp's own warning"
expect 0 "fit -c n_ctx_train" "$ggufmap" fit "$one" -c "$train"
lacks "$work/out" "trained context" "no note at the trained context"
# -np 2: n_ctx_seq = n_ctx / 2 padded to 256 (llama-context.cpp:294): 2 * train is still inside
expect 0 "fit -c 2*train -np 2" "$ggufmap" fit "$one" -c $((2 * train)) -np 2
lacks "$work/out" "trained context" "n_ctx_seq is per sequence"
expect 0 "fit -c 4*train -np 2" "$ggufmap" fit "$one" -c $((4 * train)) -np 2
has "$work/out" "n_ctx_seq ($((2 * train))) > n_ctx_train ($train)" "per-sequence figure"
expect 0 "fit --json past the trained context" "$ggufmap" fit "$one" -c $((4 * train)) --json
has "$work/err" "possible training context overflow" "JSON: the note on stderr"

# ---- 6. plan proposes a repack only when it saves 1/100 of what it rewrites, or makes the run fit
fx --arch llama --type f32 --n-embd 512 --n-ff 2048 --vocab 32 --layers 2 --move token_embd.weight:mid -o "$work/th.gguf"
expect 0 "repack --dry-run for the figures" "$ggufmap" repack "$work/th.gguf" --device metal --dry-run --json
read -r gb ga cb ca data < <(json "$work/out" '[j.cases[0].gpu_before, j.cases[0].gpu_after, j.cases[0].cpu_before, j.cases[0].cpu_after, j.data_bytes + j.hole_bytes].join(" ")')
gain=$(( gb + cb - ga - ca ))
(( gain > 0 && gain * 100 < data )) && ok || bad "the case is not a small gain: $gain of $data"
expect 0 "plan, small gain, no limit" "$ggufmap" plan "$work/th.gguf" --device metal --json
[[ $(json "$work/out" 'j.suggestions.some(s => s.command.startsWith("ggufmap repack"))') == false ]] && ok ||
  bad "plan proposes rewriting $data bytes to save $gain"
# the same gain is the one that makes it fit under a limit between after and before: proposed
expect 3 "plan, small gain that makes it fit" "$ggufmap" plan "$work/th.gguf" --device metal --limit "${ga}B"
grep -q '^  1\. repack' "$work/out" && ok || bad "the repack that makes it fit is not step 1"
has "$work/out" "after next step 1 below: FITS" "the answer after the repack"

# ---- 6. errors that name the likely cause
# a safetensors file: u64 little-endian header length, then its JSON
printf '\x12\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{}}' >"$work/m.safetensors"
expect 2 "a safetensors file" "$ggufmap" inspect "$work/m.safetensors"
has "$work/err" "a safetensors file" "safetensors named"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n' >"$work/lfs.gguf"
expect 2 "a Git LFS pointer" "$ggufmap" plan "$work/lfs.gguf"
has "$work/err" "Git LFS pointer" "LFS pointer named"
# a truncated download: the file cut inside its tensor data
size=$(stat -c %s "$one")
head -c $((size / 2)) "$one" >"$work/cut.gguf"
expect 2 "a truncated file" "$ggufmap" inspect "$work/cut.gguf"
has "$work/err" "truncated or unfinished download" "truncation named"
# a missing shard, the last or the first
fx --arch llama --layers 4 --shards 4 -o "$work/s4.gguf"
mv "$work/s4-00004-of-00004.gguf" "$work/away.gguf"
expect 2 "the last shard missing" "$ggufmap" inspect "$work/s4-00001-of-00004.gguf"
has "$work/err" "shard 4 of 4 missing: $work/s4-00004-of-00004.gguf" "the missing shard named"
mv "$work/away.gguf" "$work/s4-00004-of-00004.gguf"
mv "$work/s4-00001-of-00004.gguf" "$work/away.gguf"
expect 2 "the first shard missing" "$ggufmap" fit "$work/s4-00003-of-00004.gguf"
has "$work/err" "shard 1 of 4 missing: $work/s4-00001-of-00004.gguf" "the missing first shard named"
mv "$work/away.gguf" "$work/s4-00001-of-00004.gguf"

# ---- 6. the SVG's labels end before the bars (x = 170): measured on rsvg-convert's rendering
command -v rsvg-convert >/dev/null && ok || bad "rsvg-convert is missing (librsvg2-bin, scripts/deps.sh)"
fx --arch gemma4 -o "$work/g4.gguf"
expect 0 "plan --svg with a lazy table" "$ggufmap" plan "$work/g4.gguf" --device metal -lzm on --svg "$work/g4.svg"
mkdir -p "$work/labels"
node "$(dirname "$0")/label_extent.js" "$work/g4.svg" "$work/labels" >"$work/extents" || bad "label_extent.js failed"
grep -q "(lazy)" "$work/extents" && ok || bad "no lazy buffer's label was measured: $(cat "$work/extents")"
awk -F'\t' '$2 < 0 || $2 >= 170 {print}' "$work/extents" >"$work/over"
[[ -s $work/extents && ! -s $work/over ]] && ok || bad "labels reaching the bars: $(cat "$work/over")"

# ---- 6. wording: plurals
expect 0 "fit -b 1 -ub 1" "$ggufmap" fit "$one" -c 512 -b 1 -ub 1
has "$work/out" "(1 row at the first full batch)" "one row"
grep -qE '(^|[^0-9])1 rows' "$work/out" && bad "fit says '1 rows'" || ok
gguf_kv "$work/onekey.gguf" general.name=x
expect 0 "inspect a file of one key" "$ggufmap" inspect --metadata "$work/onekey.gguf"
has "$work/out" "(first shard, 1 key)" "one key"

# ---- 6. Ctrl-C: 130 (128 + SIGINT), nothing partial left; help lists it with every command
fx --arch llama --type f32 --n-embd 512 --vocab 4096 --n-ff 1024 --layers 2 -o "$work/big.gguf"
mkdir -p "$work/int"
GGUFMAP_REPACK_TEST_DELAY_US=30000 "$hooks" repack "$work/big.gguf" -o "$work/int/o.gguf" --threads 1 >/dev/null 2>"$work/err" &
pid=$!; sleep 0.4; kill -INT $pid; wait $pid; st=$?
[[ $st == 130 ]] && ok || bad "SIGINT: exit $st, expected 130"
[[ -z $(ls -A "$work/int") ]] && ok || bad "SIGINT left files: $(ls "$work/int")"
expect 0 "help" "$ggufmap" help
has "$work/out" "130  interrupted by Ctrl-C" "help's exit statuses"
for cmd in inspect plan fit repack hash verify load; do
  grep -qE "^  $cmd " "$work/out" && ok || bad "help does not list $cmd"
  has "$work/out" "$cmd" "help's exit statuses name $cmd"
  expect 0 "$cmd --help" "$ggufmap" "$cmd" --help
  has "$work/out" "130  interrupted" "$cmd --help's exit statuses"
  expect 0 "help" "$ggufmap" help
done

summary
