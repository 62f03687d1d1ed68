#!/usr/bin/env bash
# Servers that misbehave (tests/remote/fault_server.py, one fault per path):
# each ends in a clear message and exit 2, in bounded time and memory, or,
# where the fault can be lived with (no Range support, 429 then success), in
# the same result as the local file without downloading the model.
#   faults.sh GGUFMAP FIXTURE_MAKER RUNSTAT WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 runstat=$3 work=$4
source "$(dirname "$0")/lib.sh"

root=$work/files token=tok_0123456789
mkdir -p "$root"
"$fixture" --arch llama --tokenizer spm --type q8_0 -o "$root/spm.gguf" >/dev/null || bad "fixture maker"
"$fixture" --replica qwen3.8-flash-next -o "$root/Q" >/dev/null || bad "fixture maker (replica)"
start_fault_server "$root" "$token"
base=http://127.0.0.1:$fault_port

# fault NAME STATUS MESSAGE MAX_SECONDS ARGS...: `ggufmap inspect ARGS` exits
# STATUS within MAX_SECONDS and under 256 MiB, its stderr holding MESSAGE
fault() {
  local what=$1 want=$2 message=$3 max_s=$4; shift 4
  "$runstat" "$ggufmap" inspect --no-cache "$@" >"$work/stat" 2>"$work/err"
  local rc wall rss
  rc=$(sed -n 's/.*status=\([0-9]*\).*/\1/p' "$work/stat")
  wall=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$work/stat")
  rss=$(sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p' "$work/stat")
  [[ $rc == "$want" ]] && { [[ -z $message ]] || grep -q -- "$message" "$work/err"; } && ok ||
    bad "$what: exit $rc (want $want), stderr: $(grep -v maxrss "$work/err" | head -c 400)"
  awk -v w="$wall" -v m="$max_s" 'BEGIN { exit !(w <= m) }' && ok || bad "$what: took $wall s, more than $max_s s"
  ((rss < 262144)) && ok || bad "$what: $rss KiB resident"
}

fault "no Range support" 0 "" 20 --json "$base/norange/Q-00002-of-00004.gguf"
"$ggufmap" inspect --json --no-cache "$base/norange/Q-00002-of-00004.gguf" >"$work/r.json" 2>/dev/null
"$ggufmap" inspect --json "$root/Q-00002-of-00004.gguf" >"$work/l.json"
d=$(same_json "$work/r.json" "$work/l.json") && ok || bad "no Range support: differs from the local file: $d"
over=$(jq_node "$work/r.json" 'd.shards.filter(s => s.fetched_bytes > 2 * s.data_offset + 65536).length')
[[ $over == 0 ]] && ok || bad "no Range support: $over shards cost more than 2 x header + 64 KiB"
# The server writes into socket buffers until we hang up: a few MiB of 103.7 GiB.
awk '/norange wrote/ { if ($4 > 64 * 1048576) { print; bad = 1 } } END { exit bad }' "$work/fault.log" && ok ||
  bad "no Range support: the server sent more than 64 MiB of a shard"
grep -q "norange wrote" "$work/fault.log" && ok || bad "the fault server logged no hang-up"

fault "truncated body" 2 "(truncated)" 10 "$base/truncated/spm.gguf"
fault "wrong Content-Range" 2 "asked for bytes 0-65535, the server sent bytes 100-65635" 10 "$base/badrange/spm.gguf"
fault "416" 2 "HTTP 416" 10 "$base/416/spm.gguf"
fault "429 then success" 0 "" 10 --verbose "$base/429/spm.gguf"
grep -q "retrying .* in 1.00 s (HTTP 429" "$work/err" && ok || bad "Retry-After: 1 was not honoured: $(cat "$work/err")"
fault "500s" 2 "HTTP 500, still after 3 tries" 10 --retries 2 "$base/500/spm.gguf"
[[ $(grep -c "^/500/spm.gguf " "$work/fault.log") == 3 ]] && ok || bad "500s: expected 3 requests"
fault "a stall" 2 "no data for 2 s (timeout" 10 --timeout 2 "$base/stall/spm.gguf"
fault "no answer" 2 "no answer for 2 s (timeout" 10 --timeout 2 "$base/silent/spm.gguf"
fault "a redirect loop" 2 "more than 10 redirects (a loop?)" 10 "$base/loop/spm.gguf"
[[ $(grep -c "^/loop/spm.gguf " "$work/fault.log") == 11 ]] && ok || bad "a redirect loop: expected 11 requests"
HF_ENDPOINT=$base HF_TOKEN=$token fault "a redirect to another host" 0 "" 10 "$base/hub/spm.gguf"
grep -q "^/hub/spm.gguf .*auth=yes -> 302" "$work/fault.log" && ok || bad "the token did not reach the endpoint"
grep -q "^/cdn/spm.gguf .*auth=no -> 206" "$work/fault.log" && ok || bad "the other host was not asked without a token"
HF_ENDPOINT=$base fault "no token" 2 "access denied: the repository may be gated" 10 "$base/hub/spm.gguf"
HF_ENDPOINT=$base HF_TOKEN=$token fault "a token in a message" 2 "not found" 10 "$base/none/spm.gguf"
grep -q "$token" "$work/err" && bad "the token appears in a message" || ok
fault "10^12 tensors in a 2^62-byte file" 2 "1000000000000 tensor infos cannot fit" 10 "$base/huge/1000000000000"
fault "10^12 tensors in a 24-byte file" 2 "1000000000000 tensor infos cannot fit" 10 "$base/tiny/1000000000000"
fault "a header past --max-header" 2 "the header goes on past the 8192 bytes" 10 --max-header 8K "$base/ok/spm.gguf"
fault "a refused connection" 2 "cannot connect" 10 "http://127.0.0.1:$(free_port)/x.gguf"
summary
