#!/usr/bin/env bash
# url.sh GGUFMAP FIXTURE WORKDIR - the hostile models through a URL (issue 20
# item 1: "also through a URL"): the three crashers and a few of each kind,
# served by nginx (tests/remote/lib.sh), are refused by `ggufmap plan URL`
# and `ggufmap fit URL` (CPU, Metal, CUDA) with exit status 2 and the very
# message the local file gets; a model llama.cpp loads gets the same fit.
# Prints "P passed, F failed"; exit status 1 on any failure.
set -uo pipefail
ggufmap=$1 fixture=$2 work=$3
HOSTILE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/remote/lib.sh
source "$HOSTILE/../remote/lib.sh"

www=$work/www
mkdir -p "$www"
NAMES=(gemma4-shared-all qwen4exp-conv0 qwen4exp-conv1 qwen4exp-state-huge llama-embd-max qwen3moe-used-max
       llama-headkv-layer0 qwen3-rope-dim llama-tokenizer-missing gemma4-shared-none)
for n in "${NAMES[@]}"; do
  args=$(awk -v n="$n" '$1 == n { $1 = ""; print }' "$HOSTILE/cases.txt")
  [ -n "$args" ] || { bad "no case $n in cases.txt"; continue; }
  # shellcheck disable=SC2086
  "$fixture" $args -o "$www/$n.gguf" >/dev/null || bad "fixture $n"
done

port=$(free_port)
start_nginx "$work/nginx" "
  server {
    listen 127.0.0.1:$port;
    root $www;
  }"
wait_port 127.0.0.1 "$port" || { echo "FAIL: nginx did not start"; exit 1; }

for n in "${NAMES[@]}"; do
  for dev in cpu metal cuda; do
    d=()
    [ "$dev" = cpu ] || d=(--device "$dev" -ngl all)
    for cmd in plan fit; do
      c=()
      [ "$cmd" = fit ] && c=(-c 512)
      "$ggufmap" "$cmd" "$www/$n.gguf" "${c[@]}" "${d[@]}" --json >"$work/local.out" 2>"$work/local.err"
      lrc=$?
      "$ggufmap" "$cmd" "http://127.0.0.1:$port/$n.gguf" --no-cache "${c[@]}" "${d[@]}" --json \
        >"$work/url.out" 2>"$work/url.err"
      urc=$?
      # the same verdict and message (the path and the URL aside)
      lmsg=$(sed "s|$www/$n.gguf|MODEL|g" "$work/local.err")
      umsg=$(sed "s|http://127.0.0.1:$port/$n.gguf|MODEL|g" "$work/url.err")
      if [ $lrc -ne $urc ] || [ "$lmsg" != "$umsg" ]; then
        bad "$n $cmd $dev: local exit $lrc '$lmsg', URL exit $urc '$umsg'"
      elif [ $lrc -eq 2 ] && ! grep -q "llama.cpp" "$work/url.err"; then
        bad "$n $cmd $dev: refused without llama.cpp's reason: $umsg"
      elif [ $lrc -eq 0 ] && ! same_json "$work/local.out" "$work/url.out" >/dev/null 2>&1; then
        bad "$n $cmd $dev: the URL's figures differ from the file's"
      else
        ok
      fi
    done
  done
done
summary
