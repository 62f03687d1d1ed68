#!/usr/bin/env bash
# Servers that misbehave (tests/remote/fault_server.py, one fault per path):
# each ends in a clear message and exit 2, in bounded time and memory, or,
# where the fault can be lived with (no Range support, 429 then success), in
# the same result as the local file without downloading the model.  Then
# issue 20's reproducers: --timeout a deadline (a dripping body), precise
# messages (a huge header line, a huge Location, a 401 with a token given),
# dot segments kept inside the endpoint, --verbose escaped, Last-Modified
# without an ETag, a FIFO in the cache.
#   faults.sh GGUFMAP FIXTURE_MAKER RUNSTAT WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 runstat=$3 work=$4
source "$(dirname "$0")/lib.sh"

root=$work/files token=tok_0123456789
mkdir -p "$root"
"$fixture" --arch llama --tokenizer spm --type q8_0 -o "$root/spm.gguf" >/dev/null || bad "fixture maker"
"$fixture" --replica qwen3.8-flash-next -o "$root/Q" >/dev/null || bad "fixture maker (replica)"
# a header over the first request's 64 KiB (a 32000-token vocabulary): read in several answers
"$fixture" --arch llama --tokenizer spm --vocab 32000 --type q8_0 -o "$root/bigvocab.gguf" >/dev/null || bad "fixture maker"
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
fault "a stall" 2 "still coming after 0 body bytes when the 2 s that --timeout allows for the network in all were spent" 4 \
  --timeout 2 "$base/stall/spm.gguf"
fault "no answer" 2 "no answer when the 2 s that --timeout allows for the network in all were spent" 4 \
  --timeout 2 "$base/silent/spm.gguf"
# --timeout is a deadline, not an idle limit: 2 bytes a second are no stall,
# and still the command ends on time (issue 20, item 4)
fault "a body dripping 2 bytes/s" 2 "(HTTP 206) was still coming after [0-9]* body bytes when the 3 s that --timeout" 5 \
  --timeout 3 "$base/drip/spm.gguf"
# a retry whose wait would pass the deadline is not waited for
fault "a retry past the deadline" 2 "a retry in 1.00 s would pass the 1 s that --timeout allows" 4 \
  --timeout 1 "$base/429/Q-00002-of-00004.gguf"
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

# ---- issue 20, item 9: precise messages
fault "a 150 KB header line" 2 "the HTTP 206 answer has a header line (a Location, a cookie...) longer than the 100 KB" 10 \
  "$base/bigheader/spm.gguf"
fault "a 200 KB Location" 2 "the HTTP 302 answer has a header line (a Location, a cookie...) longer than the 100 KB" 10 \
  "$base/longloc/200000"
grep -q "Out of memory" "$work/err" && bad "a long Location still says: $(cat "$work/err")" || ok
HF_TOKEN=$token fault "401, the token kept back" 2 "the token given was not sent: it goes to the endpoint https://huggingface.co only" 10 \
  "$base/hub/spm.gguf"
grep -q "^/hub/spm.gguf .*auth=no -> 401" "$work/fault.log" && ok || bad "401, the token kept back: it was sent"
HF_ENDPOINT=$base HF_TOKEN=wrong fault "401, the token refused" 2 "access denied: the token was refused (invalid or expired" 10 \
  "$base/hub/spm.gguf"
# dot segments in hf:// and -hf are names, not steps: the requests (token
# and all) stay under the endpoint's path
HF_ENDPOINT=$base/dots HF_TOKEN=$token fault "hf:// with dot segments" 2 "not found" 10 "hf://../../x/resolve/main/m.gguf"
grep -q "^/dots/%2E%2E/%2E%2E/resolve/main/x/resolve/main/m.gguf .*auth=yes -> 404" "$work/fault.log" && ok ||
  bad "hf:// with dot segments: the server saw $(grep -v '^/dots/' "$work/fault.log" | tail -1)"
HF_ENDPOINT=$base/dots HF_TOKEN=$token fault "-hf with dot segments" 2 "not found" 10 -hf ../x
grep -q "^/dots/api/models/%2E%2E/x/refs .*auth=yes -> 404" "$work/fault.log" && ok ||
  bad "-hf with dot segments: the server saw $(tail -1 "$work/fault.log")"
# --verbose prints what servers send (a redirect's Location) escaped
fault "ESC in a redirect" 2 "" 10 --verbose "$base/esc/spm.gguf"
grep -q $'\x1b' "$work/err" && bad "ESC reached the terminal: $(od -c "$work/err" | head -5)" || ok
grep -q 'esc2/\\x1b\[31mspm.gguf' "$work/err" && ok || bad "the redirect is not logged escaped: $(cat "$work/err")"

# ---- a file served without an ETag is checked by its Last-Modified
cache=$work/lm-cache
"$ggufmap" inspect --cache "$cache" "$base/noetag/spm.gguf" >/dev/null 2>"$work/err" && ok || bad "no ETag: $(cat "$work/err")"
"$ggufmap" inspect --cache "$cache" --verbose "$base/noetag/spm.gguf" >"$work/second" 2>"$work/err" && ok ||
  bad "no ETag, second time: $(cat "$work/err")"
grep -q "noetag/spm.gguf bytes=0-65535 -> 304, 0 body bytes" "$work/err" && ok ||
  bad "no ETag: the cache was not confirmed by Last-Modified (If-Modified-Since): $(cat "$work/err")"
fault "Last-Modified changes while reading" 2 "changed on the server while reading (Last-Modified" 10 \
  "$base/lmchange/bigvocab.gguf"

# ---- a FIFO where the cache keeps an entry: a miss at once, never a hang
# (issue 20, item 5); the entry's name is the URL's FNV-1a (remote_cache.c)
cache=$work/fifo-cache url=$base/ok/spm.gguf
mkdir -p "$cache"
entry=$cache/$(python3 -c 'import sys
h = 1469598103934665603  # gm_hash_bytes'"'"'s (internal.h) offset basis
for b in sys.argv[1].encode(): h = ((h ^ b) * 1099511628211) % 2**64
print("%016x.gguf-header" % h)' "$url")
mkfifo "$entry"
"$runstat" "$ggufmap" inspect --cache "$cache" --offline "$url" >"$work/stat" 2>"$work/err"
grep -q "status=2" "$work/stat" && grep -q "not in the cache (offline)" "$work/err" && ok ||
  bad "a FIFO in the cache, offline: $(cat "$work/stat" "$work/err")"
awk -F'wall_s=' '{ split($2, w, " "); exit !(w[1] < 5) }' "$work/stat" && ok || bad "a FIFO in the cache, offline: $(cat "$work/stat")"
"$runstat" "$ggufmap" inspect --cache "$cache" "$url" >"$work/stat" 2>"$work/err"
grep -q "status=0" "$work/stat" && ok || bad "a FIFO in the cache, online: $(cat "$work/stat" "$work/err")"
[[ -f $entry && ! -p $entry ]] && ok || bad "a FIFO in the cache: the entry was not written in its place"
summary
