#!/usr/bin/env bash
# Round trip of `ggufmap repack` over every fixture architecture x order x
# shard count (1, 3), plus --move-across-shards: for each case
#   - repack with a placement the order is meant to make tight;
#   - `verify` says input and output hold the same tensors and metadata, the
#     model digests are equal, every key-value pair is byte-identical;
#   - the output loads in the real llama.cpp (oracle) and its MAPPED/ALLOC
#     lines equal `plan --format buffers` for the same flags;
#   - plan says 0 foreign bytes in every mapped buffer for that placement.
#   roundtrip.sh GGUFMAP FIXTURE_MAKER ORACLE WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 oracle=$3 work=$4
. "$(dirname "$0")/lib.sh"

# kv dump of every shard (key, type, value bytes) from inspect --json --full --metadata
kvdump() { "$ggufmap" inspect --json --full --metadata "$1" | node -e '
  let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
    const j = JSON.parse(s);
    for (const m of j.metadata) console.log(m.key + " " + m.type + " " + JSON.stringify(m.value)); });'; }

# case ARCH SHARDS ORDER MOVE [COPY] -- placement flags for plan/repack come
# from the order; COPY is repack's --copy mode (default: auto)
run_case() {
  local arch=$1 shards=$2 order=$3 move=$4 copy=${5:-}
  local id="$arch-$shards-$order${move:+-move}${copy:+-$copy}" d="$work/$arch-$shards-$order${move:+-move}${copy:+-$copy}"
  mkdir -p "$d"
  local fx=(--arch "$arch" --type q8_0 --layers 3 --order shuffle:7 --seed 3)
  [[ $arch == llama ]] && fx+=(--alignment 64)
  local in=$d/in.gguf out=$d/out.gguf first_in first_out
  if (( shards > 1 )); then
    fx+=(--shards "$shards")
    first_in=$d/in-00001-of-0000$shards.gguf first_out=$d/out-00001-of-0000$shards.gguf
  else
    first_in=$in first_out=$out
  fi
  "$fixture" "${fx[@]}" -o "$in" >/dev/null || { bad "$id: fixture maker"; return; }
  # plan flags (ggufmap) and oracle flags (llama.cpp) of the placement to make tight
  local pa oa
  case $order in
    canonical) pa=(--device metal -ngl 2 -nr) oa=(--fake-gpu metal --ngl 2 --no-repack) ;;
    moe) pa=(--device metal -ngl all --n-cpu-moe 1 -nr) oa=(--fake-gpu metal --ngl -1 --n-cpu-moe 1 --no-repack) ;;
    cpu-last) pa=(--device cuda -ngl 1 -nr --no-host) oa=(--fake-gpu cuda --ngl 1 --no-repack --no-host) ;;
    auto) pa=(--device metal -ngl 1 -nr) oa=(--fake-gpu metal --ngl 1 --no-repack) ;;
  esac
  local ra=("${pa[@]}" --order "$order" -o "$out")
  [[ -n $move ]] && ra+=(--move-across-shards)
  [[ -n $copy ]] && ra+=(--copy "$copy")
  if ! "$ggufmap" repack "$first_in" "${ra[@]}" >"$d/repack.out" 2>"$d/repack.err"; then
    bad "$id: repack failed: $(tail -c 400 "$d/repack.err")"; return
  fi
  ok
  # who copied: the kernel when asked (input and output share a file system
  # here); the posix build has no range copy (src/os.h), so write() does
  local kernel_copy='copy_file_range)'
  [[ ${GGUFMAP_PORTABLE:?set by CMake: native or posix} == posix ]] && kernel_copy='pread/pwrite)'
  case $copy in
    kernel) grep -q "$kernel_copy" "$d/repack.out" && ok || bad "$id: --copy kernel ($GGUFMAP_PORTABLE build) did not report $kernel_copy: $(grep written "$d/repack.out")" ;;
    write) grep -q 'pread/pwrite)' "$d/repack.out" && ok || bad "$id: --copy write used copy_file_range: $(grep written "$d/repack.out")" ;;
  esac
  # the names llama.cpp expects
  local nfiles; nfiles=$(ls "$d"/out*.gguf 2>/dev/null | wc -l)
  [[ $nfiles == "$shards" ]] && ok || bad "$id: $nfiles output files, expected $shards"
  ls "$d" | grep -q 'tmp-' && bad "$id: temporary files left: $(ls "$d")" || ok
  # lossless
  "$ggufmap" verify "$first_in" "$first_out" >"$d/verify.out" && ok || bad "$id: verify: $(cat "$d/verify.out")"
  local da db
  da=$("$ggufmap" hash --digest-only "$first_in" | awk '{print $2}')
  db=$("$ggufmap" hash --digest-only "$first_out" | awk '{print $2}')
  [[ -n $da && $da == "$db" ]] && ok || bad "$id: digests differ: $da vs $db"
  kvdump "$first_in" >"$d/kv.in"; kvdump "$first_out" >"$d/kv.out"
  cmp -s "$d/kv.in" "$d/kv.out" && ok || bad "$id: metadata differs: $(diff "$d/kv.in" "$d/kv.out" | head -3)"
  if (( shards > 1 )); then
    for k in $(seq 2 "$shards"); do
      kvdump "$d/in-0000$k-of-0000$shards.gguf" >"$d/kv$k.in"; kvdump "$d/out-0000$k-of-0000$shards.gguf" >"$d/kv$k.out"
      cmp -s "$d/kv$k.in" "$d/kv$k.out" && ok || bad "$id: shard $k metadata differs"
    done
  fi
  # each tensor's shard kept unless --move-across-shards
  if [[ -z $move ]]; then
    "$ggufmap" inspect --json "$first_in" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const t of JSON.parse(s).tensors)console.log(t.name+" "+t.shard)})' | sort >"$d/sh.in"
    "$ggufmap" inspect --json "$first_out" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const t of JSON.parse(s).tensors)console.log(t.name+" "+t.shard)})' | sort >"$d/sh.out"
    cmp -s "$d/sh.in" "$d/sh.out" && ok || bad "$id: a tensor changed shard"
  fi
  # tight for its placement
  local f; f=$(foreign "$first_out" "${pa[@]}")
  [[ $f == 0 ]] && ok || bad "$id: $f foreign bytes after repack for ${pa[*]}"
  # llama.cpp loads it; its buffers are plan's
  "$oracle" "${oa[@]}" "$first_out" >"$d/o.out" 2>"$d/o.err"
  grep -q '^RESULT ok' "$d/o.out" && ok || bad "$id: llama.cpp did not load the output: $(grep -E '^(ERR|RESULT)' "$d/o.out" | head -3)"
  grep -E '^(MAPPED|ALLOC) ' "$d/o.out" >"$d/o.lines"
  "$ggufmap" plan "$first_out" "${pa[@]}" --cpu x86 --format buffers | grep -E '^(MAPPED|ALLOC) ' >"$d/p.lines"
  if cmp -s "$d/o.lines" "$d/p.lines" && [[ -s $d/o.lines ]]; then ok; else
    bad "$id: llama.cpp's buffers differ from plan's"; diff "$d/o.lines" "$d/p.lines" | head -6
  fi
  (( failed == 0 )) && rm -rf "$d"
}

for arch in llama qwen3moe gemma4 qwen4exp; do
  for shards in 1 3; do
    for order in auto canonical moe cpu-last; do
      run_case "$arch" "$shards" "$order" ""
    done
  done
  run_case "$arch" 3 auto move
  run_case "$arch" 3 cpu-last move
done
# both ways of writing, whatever auto picks on this file system
run_case llama 3 canonical "" kernel
run_case qwen3moe 1 moe "" kernel
run_case gemma4 3 auto move write

# The family (no flags): a dry run prints every -ngl and writes nothing.
"$fixture" --arch qwen3moe --layers 3 --order reverse -o "$work/fam.gguf" >/dev/null
"$ggufmap" repack "$work/fam.gguf" --dry-run >"$work/fam.out" 2>&1 && ok || bad "dry run failed: $(cat "$work/fam.out")"
for l in "-ngl 0" "-ngl 3" "-ngl all" "--n-cpu-moe 2" "--cpu-moe" "total"; do
  grep -q -- "^$l " "$work/fam.out" && ok || bad "dry run lacks the case '$l'"
done
[[ $(ls "$work" | grep -c fam) == 2 ]] && ok || bad "dry run wrote something: $(ls "$work")"
# canonical over the family: -ngl cases all 0 foreign in the Metal buffers is
# checked on the written output
"$ggufmap" repack "$work/fam.gguf" --order canonical -o "$work/famc.gguf" >/dev/null 2>&1 || bad "family repack"
for ngl in 0 1 2 3 all; do
  f=$(foreign "$work/famc.gguf" --device metal -ngl $ngl -nr)
  [[ $f == 0 ]] && ok || bad "canonical order: $f foreign bytes at -ngl $ngl"
done
"$ggufmap" repack "$work/fam.gguf" --order moe -o "$work/famm.gguf" >/dev/null 2>&1 || bad "moe repack"
for n in 1 2 3; do
  f=$(foreign "$work/famm.gguf" --device metal -ngl all --n-cpu-moe $n -nr)
  [[ $f == 0 ]] && ok || bad "moe order: $f foreign bytes at --n-cpu-moe $n"
done
f=$(foreign "$work/famm.gguf" --device metal -ngl all --cpu-moe -nr)
[[ $f == 0 ]] && ok || bad "moe order: $f foreign bytes at --cpu-moe"

summary
