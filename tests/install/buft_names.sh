#!/usr/bin/env bash
# One owner of what a device is (issue 18): no source file but the device
# model (src/device*.c) spells a buffer type's name.  Every C string literal
# in src/ and tools/ (comments stripped) that is a buffer-type name as
# llama.cpp prints it ("CPU", "CPU_REPACK", "AMX", "CUDA0", "MTL0_Mapped",
# "CUDA_Host", "ROCm1", a "%s_Mapped"-like format or a bare suffix) fails:
# such a name must come from gm_buft_name / ggufmap_buft_name.  Prose that
# mentions names (help texts, messages) is not a name.
#   buft_names.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: buft_names.sh SOURCE_DIR}
passed=0 failed=0
name='(CPU|CPU_REPACK|AMX|(CUDA|MTL|ROCm|Vulkan)([0-9]+|%[sud])?)(_Mapped|_Host|_Split)?|(%s)?(_Mapped|_Host|_Split)'
files=$(find "$src/src" "$src/tools" -name '*.c' -o -name '*.h' | grep -v '/src/device[^/]*\.[ch]$' | sort)
[[ $(wc -l <<<"$files") -gt 50 ]] && passed=$((passed + 1)) || { echo "FAIL: only $(wc -l <<<"$files") files found"; failed=$((failed + 1)); }
for f in $files; do
  # strip comments (/* */ across lines, //), then list the string literals one a line
  hits=$(perl -0777 -ne 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; while (/"((?:[^"\\\n]|\\.)*)"/g) { print "$1\n" }' "$f" |
         grep -nxE "$name" | grep -vxE '[0-9]+:' || true)
  if [[ -n $hits ]]; then
    failed=$((failed + 1))
    echo "FAIL: $f spells buffer-type names (ask src/device.h): $(tr '\n' ' ' <<<"$hits")"
  else
    passed=$((passed + 1))
  fi
done
# the check itself finds a name where there is one
probe=$(printf 'static const char *x = "CUDA_Host"; /* "CPU" */\nint y = strcmp(a, "MTL0");\n' |
        perl -0777 -ne 's{/\*.*?\*/}{ }gs; while (/"((?:[^"\\\n]|\\.)*)"/g) { print "$1\n" }' | grep -cxE "$name")
[[ $probe == 2 ]] && passed=$((passed + 1)) || { echo "FAIL: the check finds $probe of the 2 names of its probe"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
(( failed == 0 ))
