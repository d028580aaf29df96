#!/usr/bin/env bash
# layers.upward_include: the layering of src/ is enforced by the build
# (src/CMakeLists.txt): a file of plan/ sees plan's folders and those below,
# so a downward include compiles and an upward one (search/ga.h) fails with
# the compiler's "No such file or directory".
#   upward_include.sh CXX LAYERS_DIR
set -euo pipefail
cxx=$1
layers=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "plan/plan.h"\n#include "graph/graph.h"\n#include "util/error.h"\n' >"$tmp/down.cpp"
printf '#include "search/ga.h"\n' >"$tmp/up.cpp"
"$cxx" -std=c++20 -fsyntax-only -I"$layers/plan" "$tmp/down.cpp" ||
  { echo "FAIL: plan/ cannot include its own and lower headers"; exit 1; }
if "$cxx" -std=c++20 -fsyntax-only -I"$layers/plan" "$tmp/up.cpp" 2>"$tmp/err"; then
  echo "FAIL: plan/ could include search/ga.h (an upward include built)"
  exit 1
fi
grep -q 'search/ga.h: No such file or directory' "$tmp/err" ||
  { echo "FAIL: not the missing-header error:"; cat "$tmp/err"; exit 1; }
for folder in search methods report api cli runtime; do
  [ ! -e "$layers/plan/$folder" ] || { echo "FAIL: plan's view holds $folder"; exit 1; }
done
echo "ok: plan/ sees plan, cost, graph and util only"
