# shellcheck shell=bash
# Helpers shared by differential.sh and seeds.sh (sourced).

# usage: the calling script's header comment (its help), exit status 2
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 && !/shellcheck/ { sub(/^# ?/, ""); print }' "$0"; exit 2; }

# tool_args ARGS...: the two ways to name the programs,
#   BUILD_DIR ORACLE_BIN WORKDIR ...  or  GGUFMAP_BIN FIXTURE_BIN ORACLE_BIN WORKDIR ...
# Sets ggufmap, fixture, oracle, work, and nargs (how many to shift); else usage.
tool_args() {
  if [[ $# -ge 3 && -d ${1:-} ]]; then
    oracle=$2 work=$3 nargs=3
    ggufmap=$1/tools/ggufmap fixture=$1/tools/fixture/ggufmap-fixture
  elif [[ $# -ge 4 && -f ${1:-} ]]; then
    ggufmap=$1 fixture=$2 oracle=$3 work=$4 nargs=4
  else
    usage
  fi
}

# q ARGS...: the arguments, shell-quoted, as one line to paste
q() { local s="" a; for a in "$@"; do s+=" $(printf '%q' "$a")"; done; printf '%s' "${s# }"; }

# side-by-side diff of two line files (LCS), with the differing fields named
showdiff() {
  awk -v A="$1" -v B="$2" '
    BEGIN { while ((getline l < A) > 0) a[++na] = l; close(A); while ((getline l < B) > 0) b[++nb] = l }
    function fields(s, arr,   n, i, kv, w) { delete arr; n = split(s, w, " "); arr["#kw"] = w[1]
      for (i = 2; i <= n; i++) { split(w[i], kv, "="); arr[kv[1]] = kv[2] } }
    function fdiff(x, y,   fa, fb, k, d) { fields(x, fa); fields(y, fb); d = ""
      for (k in fa) if (fa[k] != fb[k]) d = d " " (k == "#kw" ? "keyword" : k) ": " fa[k] " vs " (k in fb ? fb[k] : "(none)")
      for (k in fb) if (!(k in fa)) d = d " " k ": (none) vs " fb[k]
      return d }
    END {
      for (i = na; i >= 0; i--) for (j = nb; j >= 0; j--)
        L[i, j] = (i == na || j == nb) ? 0 : (a[i+1] == b[j+1] ? L[i+1, j+1] + 1 : (L[i+1, j] >= L[i, j+1] ? L[i+1, j] : L[i, j+1]))
      i = 0; j = 0; nd = 0; na2 = 0; nb2 = 0
      while (i < na || j < nb) {
        if (i < na && j < nb && a[i+1] == b[j+1]) { flush(); print "    = " a[i+1]; i++; j++ }
        else if (j >= nb || (i < na && L[i+1, j] >= L[i, j+1])) { da[++na2] = a[++i] }
        else { db[++nb2] = b[++j] }
      }
      flush()
      exit
    }
    function flush(   k) {
      for (k = 1; k <= na2; k++) print "    - " da[k]
      for (k = 1; k <= nb2; k++) print "    + " db[k]
      for (k = 1; k <= na2 && k <= nb2; k++) if (substr(da[k], 1, 7) == substr(db[k], 1, 7)) print "      (-" k "/+" k " differ in" fdiff(da[k], db[k]) ")"
      na2 = 0; nb2 = 0 }
  ' </dev/null
}

# classify ORACLE_RESULT PLAN_RC ORACLE_RC ORACLE_LINES PLAN_LINES: a case's
# verdict in $status (PASS or FAIL) and why in $cnote: both refuse, or the
# oracle loads, plan exits 0 and the buffer lines are identical (not empty).
classify() {
  local ores=$1 prc=$2 orc=$3 ol=$4 pl=$5
  cnote=""
  if [[ -z $ores ]]; then
    status=FAIL cnote="the oracle printed no RESULT line (rc $orc): a harness or oracle usage error"
  elif [[ $ores != ok ]]; then
    if (( prc == 2 )); then status=PASS cnote="both refuse: oracle RESULT $ores (rc $orc), plan exit 2"
    else status=FAIL cnote="oracle RESULT $ores (rc $orc) but plan exit $prc"; fi
  elif (( prc != 0 )); then
    status=FAIL cnote="plan exit $prc (oracle RESULT ok)"
  elif cmp -s "$ol" "$pl" && [[ -s $ol ]]; then
    status=PASS
  else
    status=FAIL
    [[ -s $ol ]] || cnote="oracle printed no buffer lines"
  fi
}
