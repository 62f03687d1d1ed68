#!/usr/bin/env bash
# Models served by nginx (Debian's, configured by this test in a temporary
# folder, on free loopback ports) read over HTTP, HTTPS and hf:// exactly as
# they are read from disk:
#   - inspect --json, plan --json and fit --json of a URL equal the local results field by
#     field (paths and fetch counters aside): fixtures of three architectures,
#     split and not, alignments 32 to 4096, the 103.7 GiB Qwen3.8-Flash-Next
#     replica and a 4-shard replica with a 6.4 MiB header;
#   - every shard costs at most 2 x its header bytes + 64 KiB, counted by us
#     and by nginx;
#   - a hub layout (/OWNER/REPO/resolve/REV/...) redirecting to another
#     loopback address, through hf:// and HF_ENDPOINT: the token reaches the
#     hub and never the other host; a gated repository wants the token;
#   - -hf OWNER/REPO[:QUANT] through the hub's /api/models listing;
#   - the header cache: one 304 per shard the second time, nothing offline,
#     a changed file fetched again;
#   - TLS with a certificate made here: trusted with --cacert or
#     CURL_CA_BUNDLE, refused without, HTTP/2 offered and used;
#   - the reader's corpus (tests/corpus: valid files and mutants): every file
#     gets the same verdict and message over HTTP as from disk;
#   - commands that need tensor data refuse URLs.
#   served.sh GGUFMAP FIXTURE_MAKER CORPUS_MAKER WORKDIR
set -uo pipefail
ggufmap=$1 fixture=$2 corpus=$3 work=$4
source "$(dirname "$0")/lib.sh"
need openssl "the test makes its own TLS certificate"

www=$work/www token=hf_test_token_0123456789abcdefghijklmnopq
sha=0123456789abcdef0123456789abcdef01234567
mkdir -p "$www/m" "$www/repo/org/llama-GGUF" "$www/repo/gated/x" "$work/api/api/models/org/llama-GGUF/tree"

# ---- the models ----------------------------------------------------------
mk() { "$fixture" "$@" >/dev/null || bad "fixture maker: $*"; }
mk --arch llama --shards 3 --type q8_0 --tokenizer spm --order shuffle:7 -o "$www/m/llama.gguf"
mk --arch qwen3moe --type q4_K --alignment 64 -o "$www/m/moe.gguf"
mk --arch gemma4 --shards 2 --alignment 4096 -o "$www/m/gemma.gguf"
mk --replica qwen3.8-flash-next -o "$www/m/Q"
mk --replica bench -o "$www/m/B"
for k in 1 2 3; do cp "$www/m/llama-0000$k-of-00003.gguf" "$www/repo/org/llama-GGUF/Llama-Q8_0-0000$k-of-00003.gguf"; done
cp "$www/m/moe.gguf" "$www/repo/org/llama-GGUF/Llama-Q4_K_M.gguf"
cp "$www/m/moe.gguf" "$www/repo/org/llama-GGUF/mmproj-Llama-Q4_K_M.gguf"
cp "$www/m/moe.gguf" "$www/repo/gated/x/m.gguf"
cat >"$work/api/api/models/org/llama-GGUF/refs" <<EOF
{"branches":[{"name":"dev","ref":"refs/heads/dev","targetCommit":"ffffffffffffffffffffffffffffffffffffffff"},
 {"name":"main","ref":"refs/heads/main","targetCommit":"$sha"}],"converts":[],"tags":[]}
EOF
cat >"$work/api/api/models/org/llama-GGUF/tree/$sha" <<'EOF'
[{"type":"file","oid":"a1","size":10,"path":".gitattributes"},
 {"type":"directory","oid":"b2","size":0,"path":"docs"},
 {"type":"file","oid":"c3","size":10,"path":"README.md"},
 {"type":"file","oid":"d4","size":10,"path":"mmproj-Llama-Q4_K_M.gguf"},
 {"type":"file","oid":"e5","size":10,"path":"Llama-Q8_0-00002-of-00003.gguf","lfs":{"oid":"x","size":1}},
 {"type":"file","oid":"f6","size":10,"path":"Llama-Q8_0-00001-of-00003.gguf"},
 {"type":"file","oid":"a7","size":10,"path":"Llama-Q8_0-00003-of-00003.gguf"},
 {"type":"file","oid":"b8","size":10,"path":"Llama-Q4_K_M.gguf","note":"\u00e9\ud83d\ude00 [{\"x\"}]"}]
EOF

# ---- the servers ---------------------------------------------------------
port=$(free_port) tls_port=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>"$work/openssl.err" || bad "openssl: $(cat "$work/openssl.err")"
start_nginx "$work/nginx" "
  server {
    listen 127.0.0.1:$port;
    root $www;
    location /api/ { root $work/api; default_type application/json; }
    location ~ ^/gated/(?<repo>[^/]+)/resolve/[^/]+/(?<file>.+)\$ {
      if (\$http_authorization != 'Bearer $token') { return 401; }
      return 302 http://127.0.0.2:$port/cdn/gated/\$repo/\$file;
    }
    location ~ ^/(?<owner>[^/]+)/(?<repo>[^/]+)/resolve/[^/]+/(?<file>.+)\$ {
      return 302 http://127.0.0.2:$port/cdn/\$owner/\$repo/\$file;
    }
  }
  server {
    listen 127.0.0.2:$port;
    location /cdn/ {
      if (\$http_authorization) { return 400; }
      alias $www/repo/;
    }
  }
  server {
    listen 127.0.0.1:$tls_port ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    root $www;
  }"
wait_port 127.0.0.1 "$port" && wait_port 127.0.0.2 "$port" && wait_port 127.0.0.1 "$tls_port" ||
  { bad "nginx did not start: $(tail -5 "$work/nginx/error.log")"; summary; exit 1; }
base=http://127.0.0.1:$port
access=$work/nginx/access.log

# ---- equal to the local reading, at a bounded cost -----------------------
# remote_same NAME LOCAL_NAME CMD_ARGS...: `ggufmap CMD_ARGS URL --json`
# equals the local result; the JSON goes to $work/r.json
n=0
remote_same() {
  local url=$1 local_path=$2; shift 2
  n=$((n + 1))
  # exit 3 is an answer (plan or fit over --limit), the same for both
  local rst lst
  "$ggufmap" "$@" --json --no-cache "$url" >"$work/r.json" 2>"$work/r.err"; rst=$?
  [[ $rst == 0 || $rst == 3 ]] || { bad "$* $url: exit $rst: $(cat "$work/r.err")"; return 1; }
  "$ggufmap" "$@" --json "$local_path" >"$work/l.json"; lst=$?
  [[ $lst == "$rst" ]] || { bad "$* $local_path (local): exit $lst, remote $rst"; return 1; }
  local d
  d=$(same_json "$work/r.json" "$work/l.json") && ok || bad "$* $url differs from the local file: $d"
}

# within_bound: every shard of the inspect document r.json cost at most
# 2 x its header + 64 KiB, and nginx sent no more than that either
within_bound() {
  local over
  over=$(jq_node "$work/r.json" 'd.shards.filter(s => s.fetched_bytes > 2 * s.data_offset + 65536)
           .map(s => `shard ${s.index}: ${s.fetched_bytes} bytes for a ${s.data_offset}-byte header`).join("; ")')
  [[ -z $over ]] && ok || bad "$1: $over"
  node -e '
    const fs = require("fs"), d = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    const lines = fs.readFileSync(process.argv[2], "utf8").split("\n").slice(+process.argv[3]);
    for (const s of d.shards) {
      const name = s.path.replace(/.*\//, "").replace(/\?.*/, "");
      let sent = 0;
      for (const l of lines) if (l.includes("/" + name + " ") || l.includes("/" + name + "?")) sent += +l.split(" ")[4];
      if (sent > 2 * s.data_offset + 65536) { console.log(`${name}: nginx sent ${sent}`); process.exit(1); }
    }' "$work/r.json" "$access" "$1" || bad "nginx sent too much for $url"
}

for model in llama-00002-of-00003.gguf moe.gguf gemma-00002-of-00002.gguf Q-00003-of-00004.gguf \
             B-00001-of-00004.gguf "llama-00003-of-00003.gguf?download=true"; do
  mark=$(wc -l <"$access")
  url=$base/m/$model
  remote_same "$url" "$www/m/${model%%\?*}" inspect --full && within_bound "$mark"
done
jq_node "$work/r.json" 'd.shards.map(s => s.path).join(" ")' | grep -q "llama-00001-of-00003.gguf?download=true" && ok ||
  bad "the query did not follow the split naming"
remote_same "$base/m/B-00003-of-00004.gguf" "$www/m/B-00003-of-00004.gguf" inspect
jq_node "$work/r.json" 'd.shards[0].requests > 1 && d.requests === d.shards.reduce((a, s) => a + s.requests, 0)' |
  grep -qx true && ok || bad "the 6.4 MiB header should take several requests, counted per shard"
remote_same "$base/m/llama-00001-of-00003.gguf" "$www/m/llama-00001-of-00003.gguf" plan --device metal -ngl all
remote_same "$base/m/moe.gguf" "$www/m/moe.gguf" plan --device cpu --cpu-moe
remote_same "$base/m/gemma-00001-of-00002.gguf" "$www/m/gemma-00001-of-00002.gguf" plan --device cuda -ngl 1
remote_same "$base/m/Q-00001-of-00004.gguf" "$www/m/Q-00001-of-00004.gguf" plan --device metal -ngl all --limit 96G
jq_node "$work/r.json" 'd.n_shards === 4 && d.requests >= 4 && d.fetched_bytes < 4 * 131072' | grep -qx true && ok ||
  bad "plan of the replica: fetch counters missing or too large"
# fit: weights, KV cache, compute buffers from the headers alone
remote_same "$base/m/llama-00002-of-00003.gguf" "$www/m/llama-00002-of-00003.gguf" fit -c 4096 -np 2
remote_same "$base/m/moe.gguf" "$www/m/moe.gguf" fit --device cuda -ngl all -c 8192 -fa on
remote_same "$base/m/Q-00001-of-00004.gguf" "$www/m/Q-00001-of-00004.gguf" fit --device metal -ngl all -c 262144
"$ggufmap" plan --no-cache "$base/m/Q-00002-of-00004.gguf" --device metal -ngl all --limit 96G --no-picture \
  >"$work/plan.txt" 2>&1; st=$?
[[ $st == 3 ]] && grep -q "EXCEEDS the limit" "$work/plan.txt" && ok || bad "text plan of the replica over HTTP: exit $st"

# ---- the hub: hf://, redirects to another host, the token -----------------
export HF_ENDPOINT=$base
mark=$(wc -l <"$access")
HF_TOKEN=$token remote_same "hf://org/llama-GGUF/Llama-Q8_0-00002-of-00003.gguf" "$www/m/llama-00002-of-00003.gguf" inspect
tail -n +"$((mark + 1))" "$access" >"$work/hub.log"
grep -c "^127.0.0.2:.*/cdn/org/llama-GGUF/Llama-Q8_0-0000[123]-of-00003.gguf .* 206 " "$work/hub.log" | grep -qx 3 && ok ||
  bad "the hub should redirect each shard to the other host: $(cat "$work/hub.log")"
grep -q '^127.0.0.2.*auth="yes"' "$work/hub.log" && bad "the token followed a redirect to another host" || ok
grep -q '^127.0.0.1.*resolve.* 302 .*auth="yes"' "$work/hub.log" && ok || bad "the token did not reach the hub"
jq_node "$work/r.json" 'd.requests' | grep -qx 6 && ok || bad "hf:// should cost 2 requests per shard (hub + CDN)"
remote_same "hf://org/llama-GGUF@v1.0/Llama-Q8_0-00001-of-00003.gguf" "$www/m/llama-00001-of-00003.gguf" inspect
"$ggufmap" inspect --no-cache hf://gated/x/m.gguf >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "gated" "$work/err" && grep -q "HF_TOKEN" "$work/err" && ok ||
  bad "a gated repository without a token: $(cat "$work/err")"
"$ggufmap" inspect --no-cache --hf-token "$token" hf://gated/x/m.gguf >"$work/out" 2>"$work/err" && ok ||
  bad "--hf-token: $(cat "$work/err")"
HF_TOKEN=wrong "$ggufmap" inspect --no-cache hf://gated/x/m.gguf >/dev/null 2>"$work/err"
grep -q "the token was refused" "$work/err" && ok || bad "a wrong token: $(cat "$work/err")"
grep -q "$token\|wrong" "$work/err" && bad "a token appears in a message" || ok
"$ggufmap" inspect --no-cache "http://user:secret@127.0.0.1:$port/m/none.gguf" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "not found" "$work/err" && ! grep -q secret "$work/err" && ok ||
  bad "404 with user:password in the URL: $(cat "$work/err")"

# ---- -hf OWNER/REPO[:QUANT] ----------------------------------------------
"$ggufmap" plan -hf org/llama-GGUF --json --no-cache >"$work/r.json" 2>"$work/err" || bad "-hf: $(cat "$work/err")"
jq_node "$work/r.json" 'd.model' | grep -qx "hf://org/llama-GGUF@$sha/Llama-Q4_K_M.gguf" && ok ||
  bad "-hf without a quant should pick Q4_K_M: $(jq_node "$work/r.json" 'd.model')"
"$ggufmap" plan --json "$www/m/moe.gguf" >"$work/l.json" && same_json "$work/r.json" "$work/l.json" >/dev/null && ok ||
  bad "-hf's plan differs from the local one"
"$ggufmap" inspect -hf org/llama-GGUF:q8_0 --json --no-cache >"$work/r.json" 2>"$work/err" || bad "-hf :q8_0: $(cat "$work/err")"
jq_node "$work/r.json" 'd.shards.map(s => s.path.replace(/.*\//, "")).join(" ")' |
  grep -qx "Llama-Q8_0-00001-of-00003.gguf Llama-Q8_0-00002-of-00003.gguf Llama-Q8_0-00003-of-00003.gguf" && ok ||
  bad "-hf :q8_0 should pick the first shard of the Q8_0 split"
"$ggufmap" inspect -hf org/llama-GGUF:IQ1_S --no-cache >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "no GGUF model file tagged IQ1_S" "$work/err" && ok || bad "-hf with a missing quant: $(cat "$work/err")"
"$ggufmap" inspect -hf org >/dev/null 2>&1
[[ $? == 1 ]] && ok || bad "-hf org should be a usage error"
"$ggufmap" inspect -hf org/llama-GGUF "$www/m/moe.gguf" >/dev/null 2>&1
[[ $? == 1 ]] && ok || bad "-hf and MODEL together should be a usage error"
unset HF_ENDPOINT

# ---- the header cache ------------------------------------------------------
url=$base/m/llama-00002-of-00003.gguf cache=$work/cache
"$ggufmap" inspect --json --cache "$cache" "$url" >"$work/c1.json" || bad "cache: first run"
mark=$(wc -l <"$access")
"$ggufmap" inspect --json --cache "$cache" "$url" >"$work/c2.json" || bad "cache: second run"
jq_node "$work/c2.json" '[d.fetched_bytes, d.requests].join(" ")' | grep -qx "0 3" && ok ||
  bad "the second run should fetch nothing in 3 requests: $(jq_node "$work/c2.json" '[d.fetched_bytes, d.requests]')"
[[ $(tail -n +"$((mark + 1))" "$access" | grep -c ' 304 ') == 3 ]] && ok || bad "expected three 304 answers"
same_json "$work/c1.json" "$work/c2.json" >/dev/null && ok || bad "the cached reading differs"
mark=$(wc -l <"$access")
"$ggufmap" inspect --json --cache "$cache" --offline "$url" >"$work/c3.json" && ok || bad "--offline with a cache"
[[ $(wc -l <"$access") == "$mark" ]] && ok || bad "--offline made requests"
jq_node "$work/c3.json" 'd.requests' | grep -qx 0 && same_json "$work/c1.json" "$work/c3.json" >/dev/null && ok ||
  bad "--offline: wrong counters or content"
"$ggufmap" inspect --offline --cache "$work/empty" "$url" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "not in the cache" "$work/err" && ok || bad "--offline without a cache: $(cat "$work/err")"
"$ggufmap" inspect "$base/m/moe.gguf" >/dev/null && ls "$XDG_CACHE_HOME"/ggufmap/*.gguf-header >/dev/null 2>&1 && ok ||
  bad "the default cache is not under \$XDG_CACHE_HOME/ggufmap"
"$ggufmap" inspect --json --cache "$cache" "$base/m/moe.gguf" >/dev/null # cached: now the file changes
sleep 1.1 # a new mtime second: nginx's ETag is mtime-size
mk --arch qwen3moe --type q8_0 --alignment 64 -o "$work/moe2.gguf" && mv "$work/moe2.gguf" "$www/m/moe.gguf"
"$ggufmap" inspect --json --cache "$cache" "$base/m/moe.gguf" >"$work/r.json" &&
  "$ggufmap" inspect --json "$www/m/moe.gguf" >"$work/l.json" && same_json "$work/r.json" "$work/l.json" >/dev/null &&
  jq_node "$work/r.json" 'd.fetched_bytes > 0' | grep -qx true && ok || bad "a changed file should be fetched again"

# ---- TLS ---------------------------------------------------------------------
turl=https://127.0.0.1:$tls_port/m/llama-00002-of-00003.gguf
"$ggufmap" inspect --no-cache "$turl" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "not trusted" "$work/err" && grep -q -- "--cacert" "$work/err" && ok ||
  bad "an untrusted certificate should be refused: $(cat "$work/err")"
"$ggufmap" inspect --no-cache --verbose --cacert "$work/cert.pem" "$turl" >/dev/null 2>"$work/err" && ok ||
  bad "--cacert: $(cat "$work/err")"
grep -q "HTTP/2" "$work/err" && ok || bad "nginx offers HTTP/2 over TLS; it was not used: $(head -3 "$work/err")"
CURL_CA_BUNDLE=$work/cert.pem remote_same "$turl" "$www/m/llama-00002-of-00003.gguf" plan --device metal -ngl 2

# ---- the reader's corpus: the same verdicts and messages --------------------
"$corpus" "$www/corpus" >/dev/null 2>&1 || bad "corpus maker"
cases=0 differ=0
for f in "$www"/corpus/*.gguf; do
  name=${f##*/} cases=$((cases + 1))
  "$ggufmap" inspect --json --no-cache "$base/corpus/$name" >"$work/r.json" 2>"$work/r.err"
  rs=$?
  "$ggufmap" inspect --json "$f" >"$work/l.json" 2>"$work/l.err"
  ls=$?
  # a missing shard is a 404 here and ENOENT there; the rest must read the same
  sed -e "s|$base/corpus/||g" -e 's|not found (HTTP 404 from [^)]*)|MISSING|' "$work/r.err" >"$work/r.msg"
  sed -e "s|$www/corpus/||g" -e 's|cannot open: No such file or directory|MISSING|' "$work/l.err" >"$work/l.msg"
  if [[ $rs != "$ls" ]] || ! cmp -s "$work/r.msg" "$work/l.msg" ||
     { [[ $ls == 0 ]] && ! same_json "$work/r.json" "$work/l.json" >/dev/null; }; then
    differ=$((differ + 1))
    echo "corpus $name: exit $rs vs $ls: $(head -c 300 "$work/r.err") | $(head -c 300 "$work/l.err")"
  fi
done
((cases > 100 && differ == 0)) && ok || bad "corpus: $differ of $cases files read differently over HTTP"

# ---- commands that read tensor data refuse URLs ---------------------------------
for cmd in "hash" "verify $www/m/moe.gguf" "load" "repack -o $work/out.gguf"; do
  # shellcheck disable=SC2086
  "$ggufmap" $cmd "$base/m/moe.gguf" >/dev/null 2>"$work/err"
  rc=$?
  [[ ($rc == 1 || $rc == 2) ]] && grep -q "a URL" "$work/err" && ok || bad "$cmd on a URL: exit $rc, $(cat "$work/err")"
done
for cmd in inspect plan fit; do
  "$ggufmap" "$cmd" --help >"$work/help" && grep -q -- "-hf, --hf-repo OWNER/REPO\[:QUANT\]" "$work/help" && ok ||
    bad "$cmd --help lacks -hf"
  "$ggufmap" "$cmd" -h >"$work/help" && grep -q "usage: ggufmap $cmd" "$work/help" && ok || bad "$cmd -h is not help"
done
summary
