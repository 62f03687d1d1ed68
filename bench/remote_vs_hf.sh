#!/usr/bin/env bash
# What reading the headers of a split model over HTTP costs: ggufmap
# (`inspect --json`) beside @huggingface/gguf (`ggufAllShards`, from npm,
# installed under the build folder as the oracle is), on the same files served
# by the same nginx on the loopback.  Requests and body bytes are counted by
# nginx for both, per shard; the last column is @huggingface/gguf's bytes over
# ggufmap's.  Models: the 4-shard bench replica (6.4 MiB header in shard 1,
# a 262,144-token vocabulary) and the 103.7 GiB Qwen3.8-Flash-Next replica.
#   bash bench/remote_vs_hf.sh BUILD_DIR [WORKDIR] [RUNS]
set -uo pipefail
build=$(cd "${1:?usage: remote_vs_hf.sh BUILD_DIR [WORKDIR] [RUNS]}" && pwd)
work=${2:-$build/bench-remote} runs=${3:-3}
ggufmap=$build/tools/ggufmap fixture=$build/tools/fixture/ggufmap-fixture
source "$(dirname "$0")/../tests/remote/lib.sh"
hf_version=0.4.6 hf=$build/hf-gguf

if [[ ! -f $hf/node_modules/@huggingface/gguf/package.json ]]; then
  npm install -E --prefix "$hf" "@huggingface/gguf@$hf_version" >"$work/npm.log" 2>&1 ||
    { echo "npm install @huggingface/gguf@$hf_version failed: $(tail -3 "$work/npm.log")"; exit 1; }
fi
mkdir -p "$work/www"
"$fixture" --replica bench -o "$work/www/B" >/dev/null && "$fixture" --replica qwen3.8-flash-next -o "$work/www/Q" >/dev/null ||
  { echo "fixture maker failed"; exit 1; }
port=$(free_port)
start_nginx "$work/nginx" "server { listen 127.0.0.1:$port; root $work/www; }"
wait_port 127.0.0.1 "$port" || { echo "nginx did not start: $(tail -3 "$work/nginx/error.log")"; exit 1; }
access=$work/nginx/access.log

# per_shard MARK: "requests bytes" per shard file in the log lines after MARK
per_shard() {
  # a line: ADDR:PORT "GET /FILE HTTP/1.1" STATUS BODY_BYTES range="..." auth="..."
  tail -n +"$(($1 + 1))" "$access" | awk '{ f = substr($3, 2); n[f]++; b[f] += $6 }
    END { for (f in n) print f, n[f], b[f] }' | sort
}

# wall seconds of a command, best of $runs, and the per-shard costs of its last run
measure() {
  local tag=$1 best="" t0 t1 mark; shift
  for ((r = 0; r < runs; r++)); do
    mark=$(wc -l <"$access")
    t0=$(date +%s.%N)
    "$@" >"$work/$tag.out" 2>"$work/$tag.err" || { echo "$tag failed: $(head -3 "$work/$tag.err")"; exit 1; }
    t1=$(date +%s.%N)
    best=$(awk -v best="$best" -v t0="$t0" -v t1="$t1" 'BEGIN { t = t1 - t0; print (best == "" || t < best) ? t : best }')
  done
  per_shard "$mark" >"$work/$tag.costs"
  echo "$best" >"$work/$tag.time"
}

hf_read() { node -e '
  const { ggufAllShards } = require(process.argv[1]);
  ggufAllShards(process.argv[2]).then(r => console.log(r.shards.map(s => s.tensorInfos.length).join(" ")),
                                      e => { console.error(e); process.exit(1); });' \
  "$hf/node_modules/@huggingface/gguf" "$1"; }

echo "remote header reads over HTTP/1.1 on the loopback, counted by nginx (best of $runs runs for time)"
printf '%-24s %9s %12s %9s %12s %8s\n' shard "ggufmap" "bytes" "hf/gguf" "bytes" "bytes"
printf '%-24s %9s %12s %9s %12s %8s\n' "" requests "" requests "" "hf/ours"
for model in B Q; do
  url=http://127.0.0.1:$port/$model-00001-of-00004.gguf
  measure ours "$ggufmap" inspect --json --no-cache "$url"
  measure theirs hf_read "$url"
  ours_counts=$(node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1]));
    console.log(d.shards.map(s => s.n_tensors).join(" "))' "$work/ours.out")
  [[ $ours_counts == "$(cat "$work/theirs.out")" ]] ||
    { echo "the two readers disagree on tensors per shard: $ours_counts vs $(cat "$work/theirs.out")"; exit 1; }
  join "$work/ours.costs" "$work/theirs.costs" | while read -r f oreq obytes treq tbytes; do
    printf '%-24s %9d %12d %9d %12d %8.2f\n' "$f" "$oreq" "$obytes" "$treq" "$tbytes" "$(awk -v t="$tbytes" -v o="$obytes" 'BEGIN { print t / o }')"
  done
  awk '{ r += $2; b += $3 } END { printf "%s", r " " b }' "$work/ours.costs" >"$work/ours.sum"
  awk '{ r += $2; b += $3 } END { printf "%s", r " " b }' "$work/theirs.costs" >"$work/theirs.sum"
  read -r oreq obytes <"$work/ours.sum"
  read -r treq tbytes <"$work/theirs.sum"
  printf '%-24s %9d %12d %9d %12d %8.2f\n' "$model total" "$oreq" "$obytes" "$treq" "$tbytes" \
    "$(awk -v t="$tbytes" -v o="$obytes" 'BEGIN { print t / o }')"
  printf '%-24s %9.3f s %20.3f s\n' "$model wall (best)" "$(cat "$work/ours.time")" "$(cat "$work/theirs.time")"
done
