# Shared by tests/fit/fidelity.sh and tests/fit/archs.sh (sourced, not run):
# one configuration of `ggufmap fit` against the context the real llama.cpp
# v0.5.0 creates (the oracle, tests/oracle).
#
# The caller sets GGUFMAP, ORACLE, WORK (fixtures are $WORK/NAME.gguf) and
# HERE (this directory), then calls check / check_decode per configuration
# and report at the end.  check compares:
#   - the context's sizes (n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max,
#     flash attention as resolved), or the same refusal (CTX fail) or abort;
#   - every KV cache, recurrent-state and output buffer, in order, to the
#     byte, with its buffer type;
#   - every compute buffer, in order, with its buffer type: to the byte
#     when fit says it is exact, never below llama.cpp's when fit says it is
#     an upper bound (BOUND lines); the ratio bound / llama.cpp is kept.
#     With REQUIRE_EXACT=main (the main context) or all (the MTP draft's
#     too) an upper bound there is a failure: the architecture must be exact.

n_cases=0 n_fail=0 n_refused=0
declare -A N_KIND=()
fails=()
ratios=()          # "RATIO FIXTURE" per upper bound, for report

# device_to_oracle D[,D...]: --device as the oracle's fake GPUs: a kind
# (metal, cuda) is one fake device; device names (CUDA0,CUDA1, MTL1) register
# as many fake devices as the highest ordinal needs, then --dev lists them
device_to_oracle() {
  case $1 in
    metal|cuda|cpu|none) [ "$1" = cpu ] || [ "$1" = none ] || printf '%s\n' --fake-gpu "$1"; return ;;
  esac
  local kind=cuda n=0 d o
  case $1 in MTL*|mtl*) kind=metal ;; esac
  IFS=, read -r -a devs <<<"$1"
  for d in "${devs[@]}"; do o=${d//[!0-9]/}; (( o + 1 > n )) && n=$((o + 1)); done
  printf '%s\n' --fake-gpu "$kind" --fake-gpus "$n" --dev "$1"
}

# limit_to_oracle LIST: --limit D=SIZE,... (SIZE in B, M or G, binary) as the
# free memory the oracle's fake devices report, by ordinal (llama.cpp splits
# layers by it when -ts is not given; ggufmap takes the limits for it)
limit_to_oracle() {
  local item o n free=() i out=""
  IFS=, read -r -a items <<<"$1"
  for item in "${items[@]}"; do
    [[ $item =~ ^[A-Za-z]+([0-9]+)=([0-9]+)([BMG])$ ]] || { echo "lib.sh: --limit item '$item' is not D=N[BMG]" >&2; exit 2; }
    o=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
    case ${BASH_REMATCH[3]} in M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; esac
    free[o]=$n
  done
  for ((i = 0; i < 8 && ${#free[i]} > 0; i++)); do out+="${out:+,}${free[i]}"; done
  printf '%s\n' --fake-gpu-free "$out"
}

# to_oracle ARGS...: fit's context and placement flags in the oracle's spelling
to_oracle() {
  local out=()
  while [ $# -gt 0 ]; do
    case $1 in
      -c) out+=(--ctx "$2"); shift ;;
      -np) out+=(--np "$2"); shift ;;
      -ctk) out+=(--ctk "$2"); shift ;;
      -ctv) out+=(--ctv "$2"); shift ;;
      -fa) out+=(--fa "$2"); shift ;;
      -ub) out+=(--ub "$2"); shift ;;
      -b) out+=(--b "$2"); shift ;;
      --swa-full|--kv-unified) out+=("$1") ;;
      -nkvo) out+=(--nkvo) ;;
      --no-op-offload) out+=(--no-op-offload) ;;
      --embedding) out+=(--embd) ;;
      --device) mapfile -t -O "${#out[@]}" out < <(device_to_oracle "$2"); shift ;;
      -ts) out+=(--ts "$2"); shift ;;
      --limit) mapfile -t -O "${#out[@]}" out < <(limit_to_oracle "$2"); shift ;;
      -sm) out+=(--sm "$2"); shift ;;
      -mg) out+=(--mg "$2"); shift ;;
      -ot) out+=(--ot "$2"); shift ;;
      --n-cpu-moe) out+=(--n-cpu-moe "$2"); shift ;;
      -ngl) out+=(--ngl "$2"); shift ;;
      --mtp) out+=(--mtp-draft) ;;
      --spec-draft-n-max) out+=(--draft-n-max "$2"); shift ;;
      -cmoe|--cpu-moe) out+=(--cpu-moe) ;;
      -ncmoe|--n-cpu-moe) out+=(--n-cpu-moe "$2"); shift ;;
      -ot) out+=(--ot "$2"); shift ;;
      --no-host|--no-mmap) out+=("$1") ;;
      *) echo "lib.sh: no oracle spelling for '$1'" >&2; exit 2 ;;
    esac
    shift
  done
  printf '%s\n' "${out[@]}"
}

# oracle_lines OUT: the oracle's context lines in fit_lines.js's format
oracle_lines() {
  awk '
    $1 == "RESULT" && $2 == "abort" { abort = 1 }
    $1 == "CTX" && $2 == "fail" { fail = 1 }
    $1 == "CTX" && $2 == "ok" { ok = $0 }
    $1 == "CTXBUF" && $2 != "kind=compute" { buf[++nb] = $1 " " $2 " " $3 " " $4 }
    $1 == "CTXTOTAL" && $2 == "kind=compute" { comp[++nc] = "CTXBUF " $2 " " $3 " " $4 }
    END {
      if (abort) { print "CTX abort"; exit }
      if (fail) { print "CTX fail"; exit }
      print ok
      for (i = 1; i <= nb; i++) print buf[i]
      for (i = 1; i <= nc; i++) print comp[i]
    }' "$1"
}

# oracle_lines_mtp OUT: the same for a --mtp-draft run: the main context's
# lines, then DRAFT mtp and the draft context's (none when the main one failed)
oracle_lines_mtp() {
  awk '/^DRAFT mtp/ { exit } { print }' "$1" >"$1.main"
  oracle_lines "$1.main"
  if grep -q '^DRAFT mtp' "$1"; then
    echo "DRAFT mtp"
    awk 'd { print } /^DRAFT mtp/ { d = 1 }' "$1" >"$1.draft"
    oracle_lines "$1.draft"
  fi
}

# compare FIT_LINES ORACLE_LINES: exact lines as they are; an upper bound
# stands in for llama.cpp's value when not below it.  Prints the ratio of
# each bound; exit status 1 when they differ.
compare() {
  grep -v '^OUTMAX' "$1" | awk -v O="$2" '
    BEGIN { while ((getline l < O) > 0) o[++n] = l }
    { f[++m] = $0 }
    END {
      if (m != n) bad = 1
      for (i = 1; i <= m && i <= n; i++) {
        if (f[i] ~ /^BOUND/) {
          split(f[i], a, " "); split(o[i], b, " ")
          sub(/^size=/, "", a[4]); sub(/^size=/, "", b[4])
          if (a[2] != b[2] || a[3] != b[3] || a[4] + 0 < b[4] + 0) bad = 1
          else if (b[4] > 0) printf "%.4f\n", a[4] / b[4]
        } else if (f[i] != o[i]) bad = 1
      }
      exit bad
    }'
}

# check NAME FIXTURE ARGS...: one configuration (with --mtp: and the MTP
# draft context, the oracle's --mtp-draft)
check() {
  local name=$1 fx=$2
  shift 2
  local model="$WORK/$fx.gguf" dir="$WORK/case-$n_cases" oargs r mtp=false lines=oracle_lines
  mkdir -p "$dir"
  for r in "$@"; do [ "$r" = --mtp ] && mtp=true; done
  mapfile -t oargs < <(to_oracle "$@")
  if $mtp; then lines=oracle_lines_mtp; fi
  n_cases=$((n_cases + 1))
  "$GGUFMAP" fit "$model" "$@" -nr --page 1B --json >"$dir/fit.json" 2>"$dir/fit.err"
  local rc=$?
  # an assert of the architecture's graph that no context passes: fit
  # refuses the model (exit 2, llama.cpp's reason); llama.cpp must abort
  if [ $rc -eq 2 ] && grep -q "llama.cpp aborts creating any context" "$dir/fit.err"; then
    "$ORACLE" --no-repack "${oargs[@]}" "$model" >"$dir/oracle.out" 2>&1
    if $lines "$dir/oracle.out" | grep -q '^CTX abort'; then
      n_refused=$((n_refused + 1)); rm -rf "$dir"; return
    fi
    fails+=("$name: fit refuses every context ($(head -c 200 "$dir/fit.err")), llama.cpp does not abort")
    n_fail=$((n_fail + 1)); return
  fi
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    fails+=("$name: ggufmap fit exited $rc: $(head -c 300 "$dir/fit.err")"); n_fail=$((n_fail + 1)); return
  fi
  if ! node "$HERE/fit_lines.js" "$dir/fit.json" >"$dir/fit.lines" 2>"$dir/fit_lines.err"; then
    fails+=("$name: inconsistent JSON: $(head -c 300 "$dir/fit_lines.err")"); n_fail=$((n_fail + 1)); return
  fi
  "$ORACLE" --no-repack "${oargs[@]}" "$model" >"$dir/oracle.out" 2>&1
  $lines "$dir/oracle.out" >"$dir/oracle.lines"
  if ! compare "$dir/fit.lines" "$dir/oracle.lines" >"$dir/ratios"; then
    fails+=("$name ($fx $*): fit and llama.cpp differ:
$(diff "$dir/fit.lines" "$dir/oracle.lines" | grep -v OUTMAX | head -8)"); n_fail=$((n_fail + 1)); return
  fi
  local scope=cat
  [ "${REQUIRE_EXACT:-}" = main ] && scope="sed /^DRAFT/q"
  if [ -n "${REQUIRE_EXACT:-}" ] && $scope "$dir/fit.lines" | grep -q '^BOUND'; then
    fails+=("$name ($fx $*): fit gives an upper bound where the graph must be exact"); n_fail=$((n_fail + 1)); return
  fi
  for r in $(cat "$dir/ratios"); do ratios+=("$r $fx"); done
  if grep -q '^CTX \(fail\|abort\)' "$dir/oracle.lines"; then n_refused=$((n_refused + 1)); fi
  local k
  for k in $(awk '$1 == "DRAFT" { d = "mtp_" } $1 == "CTXBUF" { sub(/^kind=/, "", $2); print d $2 }
                 $1 == "BOUND" { sub(/^kind=/, "", $2); print d $2 "_bound" }' "$dir/fit.lines"); do
    N_KIND[$k]=$(( ${N_KIND[$k]:-0} + 1 ))
  done
  rm -rf "$dir"
}

# check_decode NAME FIXTURE ARGS...: decode n_batch tokens with every
# output; the output buffer ends at fit's bytes_max, nothing else changes
check_decode() {
  local name=$1 fx=$2
  shift 2
  local model="$WORK/$fx.gguf" dir="$WORK/decode-$n_cases" oargs n_batch
  mkdir -p "$dir"
  mapfile -t oargs < <(to_oracle "$@")
  n_cases=$((n_cases + 1))
  "$GGUFMAP" fit "$model" "$@" -nr --page 1B --json >"$dir/fit.json" 2>/dev/null
  node "$HERE/fit_lines.js" "$dir/fit.json" >"$dir/fit.lines" || { fails+=("$name: bad JSON"); n_fail=$((n_fail + 1)); return; }
  n_batch=$(sed -n 's/^CTX ok .* n_batch=\([0-9]*\) .*/\1/p' "$dir/fit.lines")
  "$ORACLE" --no-repack "${oargs[@]}" --decode "$n_batch" --logits-all "$model" >"$dir/oracle.out" 2>&1
  local want got before after
  want=$(awk '$1 == "OUTMAX" { print $2, $3 }' "$dir/fit.lines")
  got=$(awk '$1 == "DECTOTAL" && $2 == "kind=output" { print $3, $4 }' "$dir/oracle.out")
  before=$(awk '$1 == "CTXTOTAL" && $2 != "kind=output"' "$dir/oracle.out" | sed 's/^CTXTOTAL //')
  after=$(awk '$1 == "DECTOTAL" && $2 != "kind=output"' "$dir/oracle.out" | sed 's/^DECTOTAL //')
  if ! grep -q '^DECODE ok' "$dir/oracle.out" || [ "$want" != "$got" ] || [ "$before" != "$after" ]; then
    fails+=("$name ($fx $*): decode of $n_batch tokens: output fit '$want', llama.cpp '$got'; other buffers before/after differ: $([ "$before" != "$after" ] && echo yes || echo no)")
    n_fail=$((n_fail + 1)); return
  fi
  N_KIND[output_max]=$(( ${N_KIND[output_max]:-0} + 1 ))
  rm -rf "$dir"
}

# ratios_by_arch: per architecture (the fixture name up to a '-w' or '-N'
# suffix) the count, min, median and max of bound / llama.cpp, one line each
ratios_by_arch() {
  [ "${#ratios[@]}" -gt 0 ] || return 0
  printf '%s\n' "${ratios[@]}" | awk '{ a = $2; sub(/-(w|[0-9]+|cls)$/, "", a); print a, $1 }' | sort -k1,1 -k2,2g |
    awk '{ if ($1 != cur) { if (cur != "") out(); cur = $1; n = 0 } r[++n] = $2 }
         function out() { printf "  %-16s %4d bounds  min %6.2f  median %6.2f  max %8.2f\n", cur, n, r[1], r[int((n + 1) / 2)], r[n] }
         END { if (cur != "") out() }'
}

# report LABEL: the summary line (and every failure); exit status 1 on any
report() {
  local label=$1 k summary
  summary="$n_cases configurations ($n_refused refused or aborted by llama.cpp, identically), buffers equal:"
  for k in kv rs output compute output_max; do summary+=" $k ${N_KIND[$k]:-0}"; done
  if [ -n "${N_KIND[mtp_kv]:-}${N_KIND[mtp_output]:-}" ]; then
    summary+="; MTP draft contexts: kv ${N_KIND[mtp_kv]:-0} output ${N_KIND[mtp_output]:-0}"
    summary+=" compute ${N_KIND[mtp_compute]:-0} compute bounds ${N_KIND[mtp_compute_bound]:-0}"
  fi
  if [ "${#ratios[@]}" -gt 0 ]; then
    summary+="; compute upper bounds never below: ${#ratios[@]}, bound / llama.cpp"
    summary+=" $(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1 } END {
      printf "min %.2f median %.2f p90 %.2f max %.2f", r[1], r[int((NR + 1) / 2)], r[int(NR * 0.9 + 0.5)], r[NR] }')"
  fi
  for f in "${fails[@]}"; do printf 'FAIL: %s\n' "$f"; done
  if [ "$n_fail" -gt 0 ]; then
    echo "$label: $n_fail of $n_cases configurations differ; $summary"
    exit 1
  fi
  echo "$label: ok: $summary"
}
