#!/usr/bin/env bash
# The public API's one naming convention (issue 14), checked on the headers:
#   - an object of type ggufmap_X is made by ggufmap_X_open (it reads files
#     or the network), ggufmap_X_new (empty) or ggufmap_X_build (computed
#     from another object), and released by ggufmap_X_free;
#   - the results of an operation (ggufmap_repack's) by ggufmap_X_result_free;
#   - no other destructor spelling (close, destroy, delete, unmap) and no
#     other constructor spelling (create, make, init of an object).
#   api_names.sh INCLUDE_DIR
set -uo pipefail
inc=${1:?usage: api_names.sh INCLUDE_DIR}
fails=0 passed=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { passed=$((passed + 1)); }
names=$(grep -ho 'GGUFMAP_API [^(]*(' "$inc"/ggufmap/*.h | sed 's/($//; s/.*[ *]//' | sort -u)
[[ $(wc -l <<<"$names") -gt 100 ]] && ok || bad "found only $(wc -l <<<"$names") public functions in $inc"
for f in $names; do
  case $f in
    *_close | *_destroy | *_delete | *_unmap | *_create | *_make)
      bad "$f: destructors are ggufmap_X_free, constructors ggufmap_X_open|new|build" ;;
    *_result_free) ok ;;
    *_free)
      x=${f%_free}
      grep -qxE "${x}_(open|open_url|new|build)" <<<"$names" && ok ||
        bad "$f has no constructor ${x}_open, ${x}_new or ${x}_build" ;;
    *) ok ;;
  esac
done
# the unit tests call every constructor above; here only that each one is
# paired: a constructor without its _free is a leak waiting to happen
for f in $(grep -E '_(open|new|build)$' <<<"$names"); do
  x=${f%_*}
  grep -qx "${x}_free" <<<"$names" && ok || bad "$f has no ${x}_free"
done
echo "$passed passed, $fails failed"
(( fails == 0 ))
