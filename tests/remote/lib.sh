# shellcheck shell=bash
# Shared by the remote tests (sourced once ggufmap, fixture and work are set):
# check counters; nginx, configured and started by the test in $work on a
# free loopback port; the fault server; everything started is stopped by an
# EXIT trap.  The user's proxies, token, hub and cache are kept out.
export LC_ALL=C
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY HF_TOKEN HF_ENDPOINT MODEL_ENDPOINT \
      CURL_CA_BUNDLE
export no_proxy='*' NO_PROXY='*'
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
export XDG_CACHE_HOME=$work/xdg-cache
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# "P passed, F failed"; the exit status says whether all passed (and any ran)
summary() { echo "$passed passed, $failed failed"; (( failed == 0 && passed > 0 )); }

started=()
stop_all() { local p; for p in "${started[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
at_exit stop_all

# need PROGRAM WHY: fails the test (never skips it) when PROGRAM is missing
need() { command -v "$1" >/dev/null || { echo "FAIL: $1 is missing ($2; scripts/deps.sh installs it)"; exit 1; }; }
export PATH=$PATH:/usr/sbin:/sbin # nginx lives in /usr/sbin
need python3 "the fault server and free ports"
need node "comparing JSON documents"

# free_port: a TCP port that nothing listens on at 127.0.0.1 right now
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_port HOST PORT: until something listens there (10 s at most)
wait_port() {
  local i
  for ((i = 0; i < 100; i++)); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# start_nginx DIR SERVERS: nginx with the server blocks SERVERS (text), its
# pid, logs and temporary files in DIR, in the foreground under our trap.
# The access log has one line per request:
#   HOST:PORT "GET /path" STATUS BODY_BYTES range="R" auth="yes|"
start_nginx() {
  local dir=$1 servers=$2
  need nginx "the tests serve models with Debian's nginx"
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
user $(id -un) $(id -gn);
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 256; }
http {
  log_format test '\$server_addr:\$server_port "\$request" \$status \$body_bytes_sent range="\$http_range" auth="\${auth_seen}"';
  map \$http_authorization \$auth_seen { "" ""; default "yes"; }
  access_log $dir/access.log test;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  default_type application/octet-stream;
  sendfile on;
$servers
}
EOF
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" 2>>"$dir/error.log" &
  started+=($!)
}

# start_fault_server ROOT TOKEN: our misbehaving server; sets fault_port
start_fault_server() {
  python3 "$here/fault_server.py" "$1" "$work/fault.port" "$2" "$work/fault.log" &
  started+=($!)
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $work/fault.port ]] && break; sleep 0.1; done
  fault_port=$(cat "$work/fault.port" 2>/dev/null) && wait_port 127.0.0.1 "$fault_port" ||
    { echo "FAIL: the fault server did not start"; exit 1; }
}

# same_json A B: the two documents agree field by field, paths and the
# fetch counters aside (node prints the first difference)
same_json() { node "$here/same_json.js" "$1" "$2"; }

# jq_node FILE EXPR: evaluates the JavaScript expression EXPR over the JSON
# document in FILE, bound to `d`, and prints the result
jq_node() { node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(eval(process.argv[2]))' "$1" "$2"; }
