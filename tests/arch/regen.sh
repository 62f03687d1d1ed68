#!/usr/bin/env bash
# regen.sh ORACLE_DIR REPO_DIR WORK - src/arch_table.c is what
# scripts/gen_arch_table.py makes of llama.cpp v0.5.0's own source.
#
# The source is the tree the oracle setup keeps (ORACLE_DIR/llama.git, the
# bundle inside node-llama-cpp, commit checked): its files are written to
# WORK/src, the table is generated from them and compared with the checked-in
# src/arch_table.c byte for byte.  Then the comparison is shown to see a
# change: one create_tensor flag of src/models/llama.cpp is altered and the
# regenerated table must differ.  Prints "N passed, M failed"; exit 1 on any
# failure.
set -uo pipefail
export LC_ALL=C
oracle_dir=$1 repo=$2 work=$3
die() { echo "arch.regen: $*"; echo "0 passed, 1 failed"; exit 1; }
LOG=/dev/null
# shellcheck source=tests/oracle/common.sh
. "$repo/tests/oracle/common.sh"
command -v python3 >/dev/null 2>&1 || die "python3 not found in PATH (scripts/deps.sh installs it)"
[[ -d $oracle_dir/llama.git ]] || die "$oracle_dir/llama.git missing (run tests/oracle/setup.sh $oracle_dir)"
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh"
scratch "$work"
mapfile -t paths < <(python3 "$repo/scripts/gen_arch_table.py" --inputs)
( source_tree "$oracle_dir" "$work/src" "${paths[@]}" ) || die "cannot extract ${paths[*]}"
pass=0 fail=0
if python3 "$repo/scripts/gen_arch_table.py" "$work/src" "$work/arch_table.c" 2>"$work/gen.err"; then
  if cmp -s "$work/arch_table.c" "$repo/src/arch_table.c"; then
    echo "ok   src/arch_table.c = gen_arch_table.py of llama.cpp $LLAMA_RELEASE ($LLAMA_COMMIT)"
    pass=$((pass + 1))
  else
    echo "FAIL src/arch_table.c differs from what the generator makes of $LLAMA_RELEASE:"
    diff -u "$repo/src/arch_table.c" "$work/arch_table.c" | head -40
    fail=$((fail + 1))
  fi
else
  echo "FAIL gen_arch_table.py failed: $(cat "$work/gen.err")"
  fail=$((fail + 1))
fi
# The check sees a change in the source: output.weight made required in llama.
sed -i 's/{n_embd, n_vocab}, TENSOR_NOT_REQUIRED);/{n_embd, n_vocab}, 0);/' "$work/src/src/models/llama.cpp"
if python3 "$repo/scripts/gen_arch_table.py" "$work/src" "$work/changed.c" 2>>"$work/gen.err" &&
   ! cmp -s "$work/changed.c" "$work/arch_table.c"; then
  echo "ok   a changed create_tensor flag in src/models/llama.cpp changes the table"
  pass=$((pass + 1))
else
  echo "FAIL the table did not change with src/models/llama.cpp"
  fail=$((fail + 1))
fi
# Every method of llama_hparams the table names is implemented in
# src/arch_hparams.c (is_masked_swa, a static helper of the masks, is
# never called by the code the table compiles).
missing=()
for m in $(sed -n '/^const char \*const gm_hp_methods\[\] = {/,/^};/p' "$repo/src/arch_table.c" | grep -o '"[a-z_]*"' | tr -d '"'); do
  [[ $m == is_masked_swa ]] && continue
  grep -q "\"$m\"" "$repo/src/arch_hparams.c" || missing+=("$m")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "ok   every llama_hparams method the table names is implemented in src/arch_hparams.c"
  pass=$((pass + 1))
else
  echo "FAIL llama_hparams methods without an implementation in src/arch_hparams.c: ${missing[*]}"
  fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
