#!/usr/bin/env bash
# Loads a report in headless Chromium and checks that the page works:
#   - no console message and no uncaught error (the page logs nothing);
#   - the timeline and the memory plot drew (the page sets data-drawn on
#     <body> and on each canvas after its first draw);
#   - a screenshot is saved as a test artifact: ARTIFACTS/report.png.
# usage: browser_test.sh SWAPADVISOR TEST_DATA ARTIFACTS
# Exits 77 (CTest: skipped) when no chromium is installed.
set -uo pipefail
SA="$1"
DATA="$2"
ART="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/chromium.sh"
if ! find_chromium; then
  echo "SKIP: no chromium (scripts/test installs Debian's chromium package)"
  exit 77
fi
mkdir -p "$ART"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sa-report-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A report with every method compared (a short search), and a trace.
GRAPH="$DATA/graphs/resnet50-b64.json.gz"
"$SA" report "$GRAPH" --memory-fraction 0.5 --evaluations 300 --threads 2 --quiet \
  -o "$ART/report.html" || fail "swapadvisor report failed"
"$SA" plan "$GRAPH" --memory-fraction 0.5 --method odswap -o "$WORK/plan.json" \
  --trace "$ART/trace.json" > /dev/null || fail "swapadvisor plan --trace failed"
"$SA" report "$GRAPH" "$WORK/plan.json" -o "$WORK/plan-only.html" > /dev/null \
  || fail "swapadvisor report GRAPH PLAN failed"

check_page() {
  local page="$1" name="$2"
  run_chromium "$WORK" --dump-dom "file://$page" > "$WORK/$name.dom" 2> "$WORK/$name.log"
  local rc=$?
  [ $rc -eq 0 ] || { tail -20 "$WORK/$name.log"; fail "$name: chromium exited with $rc"; }
  if grep -E ':CONSOLE[:(]' "$WORK/$name.log"; then
    fail "$name: the page wrote to the console (above)"
  fi
  grep -q 'data-errors=' "$WORK/$name.dom" && fail "$name: the page caught errors"
  local drawn
  drawn="$(grep -o 'data-drawn="timeline:[0-9]* memory:[0-9]*"' "$WORK/$name.dom")" \
    || fail "$name: the plots did not draw (no data-drawn on <body>)"
  [[ "$drawn" =~ timeline:([0-9]+)\ memory:([0-9]+) ]] || fail "$name: bad data-drawn: $drawn"
  [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "$name: the timeline drew no steps"
  [ "${BASH_REMATCH[2]}" -gt 0 ] || fail "$name: the memory plot drew no points"
  [ "$(grep -o '<canvas id="[a-z]*"[^>]*data-drawn' "$WORK/$name.dom" | wc -l)" -eq 2 ] \
    || fail "$name: a canvas lacks data-drawn"
  local ms
  ms="$(grep -o 'data-draw-ms="[0-9]*"' "$WORK/$name.dom" | grep -o '[0-9]*')"
  echo "$name: drawn ($drawn) $ms ms after navigation"
}
check_page "$ART/report.html" report
check_page "$WORK/plan-only.html" plan-only
# The page's self-test zooms, pans, hovers every lane and clicks the tables.
check_page "$ART/report.html#selftest" selftest
grep -q 'data-selftest="ok tooltips:[1-9]' "$WORK/selftest.dom" \
  || fail "selftest: $(grep -o 'data-selftest="[^"]*"' "$WORK/selftest.dom" || echo 'did not finish')"

screenshot() {
  rm -f "$2"
  run_chromium "$WORK" --hide-scrollbars --window-size="$3" --screenshot="$2" "file://$1" \
    > /dev/null 2> "$WORK/screenshot.log" || { tail -20 "$WORK/screenshot.log"; fail "screenshot of $1"; }
  [ -s "$2" ] || fail "no screenshot $2"
  echo "screenshot: $2"
}
screenshot "$ART/report.html" "$ART/report.png" 1400,2600
screenshot "$ART/report.html#selftest" "$ART/report-interaction.png" 1400,1250
echo "PASS"
