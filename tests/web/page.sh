#!/usr/bin/env bash
# The page (make web) in a real browser: Debian's Chromium, headless, driven
# by playwright-core (tests/web/page.js), against the page and models that
# nginx serves on the loopback from two origins (the page's, and the models'
# with CORS, Range, a hub layout for hf:// and -hf, and a path without Range
# support).  page.js checks:
#   - the page is ready in under a second; the wasm's size;
#   - for fixtures of several architectures (a split model among them), the
#     Qwen3.8-Flash-Next replica (4 shards, 103.7 GiB sparse) and local files
#     picked from disk: every command the page runs answers what the command
#     line answers for the same arguments (ggufmap.fit/1 and ggufmap.plan/1
#     field for field, the SVG byte for byte), and the page shows those
#     figures (verdict, per-device table, largest context);
#   - the 4-shard replica costs the page no more requests than the command
#     line, counted by nginx; a second check costs none (the page's copy);
#   - a server without Range support does not make the page download the
#     model (nginx counts what it sent);
#   - a bad file, and a missing one, give the command line's message; a
#     server that hides Content-Range or refuses the page's origin (CORS), a
#     message that says so; no request needs a CORS preflight;
#   - keyboard only: the model typed, the machine chosen and the check run
#     without a mouse, the focus on the verdict; a phone's width without
#     sideways scrolling; the verdict in words, not only in colour;
#   - the llama.cpp version the page names is the one the reports name, and
#     every option of its llama.cpp command lines is one llama.cpp v0.5.0
#     defines (common/arg.cpp from the oracle's source);
# and writes the screenshot docs/web.png is (WORK/web.png).
#
#   page.sh GGUFMAP FIXTURE SITE NODE_MODULES ORACLE_DIR WORK
set -uo pipefail
ggufmap=$1 fixture=$2 site=$3 node_modules=$4 oracle=$5 work=$6
source "$(dirname "$0")/../remote/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
chromium=/usr/bin/chromium
[[ -x $chromium ]] || { echo "FAIL: $chromium is missing (Debian's chromium; scripts/deps.sh installs it)"; exit 1; }
[[ -f $site/ggufmap.wasm ]] || { echo "FAIL: no page in $site (web.build makes it)"; exit 1; }
[[ -d $node_modules/playwright-core ]] || { echo "FAIL: no playwright-core in $node_modules (web.setup installs it)"; exit 1; }

www=$work/www sha=0123456789abcdef0123456789abcdef01234567
q=org/Qwen3.8-Flash-Next-GGUF
mkdir -p "$www/m" "$www/local" "$www/repo/org/llama-GGUF" "$www/repo/$q" "$work/api/api/models/org/llama-GGUF/tree" \
  "$work/api/api/models/$q/tree"

# ---- the models ----------------------------------------------------------
mk() { "$fixture" "$@" >/dev/null || { echo "FAIL: fixture maker: $*"; exit 1; }; }
mk --arch llama --shards 3 --type q8_0 --tokenizer spm --order shuffle:7 -o "$www/m/llama.gguf"
mk --arch qwen3moe --type q4_K --alignment 64 -o "$www/m/moe.gguf"
mk --arch gemma4 --shards 2 --alignment 4096 -o "$www/m/gemma.gguf"
mk --arch qwen35 --type q8_0 -o "$www/m/qwen35.gguf"
mk --arch mamba2 -o "$www/m/mamba2.gguf"
mk --replica qwen3.8-flash-next -o "$www/m/Q"
mk --replica bench -o "$www/m/B"     # a 6.4 MiB header: the page's buffers grow (and move) under the reader
mkdir -p "$www/norange" && for k in 1 2 3 4; do
  ln "$www/m/Q-0000$k-of-00004.gguf" "$www/norange/"
  ln "$www/m/Q-0000$k-of-00004.gguf" "$www/repo/$q/Qwen3.8-Flash-Next-0000$k-of-00004.gguf"
done
for k in 1 2 3; do cp "$www/m/llama-0000$k-of-00003.gguf" "$www/local/"; done
cp "$www/m/moe.gguf" "$www/local/"
# (picked files are never sparse: how much a repack needs free counts allocated bytes, which a page cannot see)
for k in 1 2 3 4; do cp --sparse=never "$www/m/B-0000$k-of-00004.gguf" "$www/local/"; done
for k in 1 2 3; do cp "$www/m/llama-0000$k-of-00003.gguf" "$www/repo/org/llama-GGUF/Llama-Q8_0-0000$k-of-00003.gguf"; done
cp "$www/m/moe.gguf" "$www/repo/org/llama-GGUF/Llama-Q4_K_M.gguf"
head -c 4096 /dev/urandom >"$www/m/bad.gguf"
printf 'GGUF\003\000\000\000' >"$www/m/short.gguf"
# the hub's listings for -hf: the branch, then the files at its commit
for r in org/llama-GGUF $q; do
  echo "{\"branches\":[{\"name\":\"main\",\"targetCommit\":\"$sha\"}],\"converts\":[],\"tags\":[]}" \
    >"$work/api/api/models/$r/refs"
done
cat >"$work/api/api/models/$q/tree/$sha" <<'EOF'
[{"type":"file","path":"README.md"},
 {"type":"file","path":"Qwen3.8-Flash-Next-00001-of-00004.gguf"},
 {"type":"file","path":"Qwen3.8-Flash-Next-00002-of-00004.gguf"},
 {"type":"file","path":"Qwen3.8-Flash-Next-00003-of-00004.gguf"},
 {"type":"file","path":"Qwen3.8-Flash-Next-00004-of-00004.gguf"}]
EOF
cat >"$work/api/api/models/org/llama-GGUF/tree/$sha" <<'EOF'
[{"type":"file","oid":"a1","size":10,"path":".gitattributes"},
 {"type":"file","oid":"f6","size":10,"path":"Llama-Q8_0-00001-of-00003.gguf"},
 {"type":"file","oid":"a7","size":10,"path":"Llama-Q8_0-00002-of-00003.gguf"},
 {"type":"file","oid":"b8","size":10,"path":"Llama-Q4_K_M.gguf"}]
EOF

# ---- the servers: the page's origin, and the models' --------------------
page_port=$(free_port) port=$(free_port)
# CORS as a CDN gives it: the page's origin allowed, Content-Range exposed,
# and no answer to a preflight (nginx refuses OPTIONS): the page's requests
# (one GET, a single bytes=A-B range) must need none
cors='add_header Access-Control-Allow-Origin * always;
      add_header Access-Control-Expose-Headers "Content-Range, Content-Length, ETag, Accept-Ranges" always;'
start_nginx "$work/nginx" "
  types { text/html html; text/javascript js; text/css css; application/wasm wasm; image/svg+xml svg; }
  server {
    listen 127.0.0.1:$page_port;
    root $site;
  }
  server {
    listen 127.0.0.1:$port;
    root $www;
    location /api/ { $cors root $work/api; default_type application/json; }
    location /norange/ { $cors max_ranges 0; }
    location /noexpose/ { add_header Access-Control-Allow-Origin * always; alias $www/m/; }
    location /nocors/ { alias $www/m/; }
    location ~ ^/(?<owner>[^/]+)/(?<repo>[^/]+)/resolve/[^/]+/(?<file>.+)\$ {
      $cors
      return 302 http://127.0.0.2:$port/cdn/\$owner/\$repo/\$file;
    }
    location / { $cors }
  }
  server {
    listen 127.0.0.2:$port;
    location /cdn/ { $cors alias $www/repo/; }
  }"
wait_port 127.0.0.1 "$page_port" && wait_port 127.0.0.1 "$port" && wait_port 127.0.0.2 "$port" ||
  { echo "FAIL: nginx did not start: $(tail -5 "$work/nginx/error.log")"; exit 1; }

# ---- the browser ---------------------------------------------------------
NODE_PATH=$node_modules node "$here/page.js" \
  --ggufmap "$ggufmap" --chromium "$chromium" --page "http://127.0.0.1:$page_port/" \
  --models "http://127.0.0.1:$port" --www "$www" --access-log "$work/nginx/access.log" \
  --site "$site" --oracle "$oracle" --work "$work"
