# shellcheck shell=bash
# Shared by the CLI tests (sourced after ggufmap and work are set):
# exit-status and output checks, and hand-made GGUF files for the cases the
# fixture maker does not make (metadata with control bytes, arrays).
# The counters (ok, bad, summary) and the fresh $work are the repack tests'.
. "$(dirname "${BASH_SOURCE[0]}")/../repack/lib.sh"

# expect STATUS DESCRIPTION CMD...: runs CMD (stdout in $work/out, stderr in
# $work/err) and checks its exit status.
expect() {
  local want=$1 what=$2; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got == "$want" ]]; then ok; else bad "$what: exit $got, expected $want; stderr: $(head -c 300 "$work/err")"; fi
}
# has FILE TEXT DESCRIPTION: FILE contains TEXT (fixed string)
has() { grep -qF -- "$2" "$1" && ok || bad "$3: '$2' not in $(head -c 400 "$1")"; }
lacks() { grep -qF -- "$2" "$1" && bad "$3: '$2' in $(head -c 400 "$1")" || ok; }

# ---- GGUF by hand: little-endian integers, strings, key-value pairs
u32() { local v=$1; printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)))"; }
u64() { u32 $(($1 & 0xffffffff)); u32 $(($1 >> 32)); }
gstr() { u64 ${#1}; printf '%s' "$1"; }
# gguf_kv FILE KEY=VALUE... : a GGUF v3 file without tensors holding string
# pairs, or u32 arrays for KEY=[1,2,3], padded to 32 bytes.
gguf_kv() {
  local file=$1; shift
  {
    printf 'GGUF'; u32 3; u64 0; u64 $#
    local pair key value
    for pair; do
      key=${pair%%=*} value=${pair#*=}
      gstr "$key"
      if [[ $value == \[*\] ]]; then
        local items; IFS=, read -ra items <<<"${value:1:${#value}-2}"
        u32 9; u32 4; u64 ${#items[@]}; local v; for v in "${items[@]}"; do u32 "$v"; done
      else
        u32 8; gstr "$value"
      fi
    done
  } >"$file"
  local size; size=$(stat -c %s "$file")
  head -c $(((32 - size % 32) % 32)) /dev/zero >>"$file"
}
