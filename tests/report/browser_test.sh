#!/usr/bin/env bash
# Loads a report in headless Chromium and checks that the page works:
#   - no console message and no uncaught error (the page logs nothing);
#   - the timeline, the memory plot and the arena drew, and the budget sweep
#     on the page that has one (the page sets data-drawn on <body> and on
#     each canvas after its first draw);
#   - its self-test (report.html#selftest) hovered every plot, found
#     tooltips in each and selected a tensor by clicking the arena;
#   - every table stays within the page's column (data-layout="ok": long
#     names are cut, wide tables scroll in their box);
#   - pages whose names are hostile (the name fuzzer, REPORT_NAMES) draw the
#     same way, and so does a page whose times pass 2^63 ns;
#   - screenshots are saved as test artifacts: ARTIFACTS/report*.png.
# usage: browser_test.sh SWAPADVISOR TEST_DATA ARTIFACTS REPORT_SAMPLE REPORT_NAMES
# (REPORT_SAMPLE: tests/report/report_sample.cpp, a page with an arena plan
# and a budget sweep; REPORT_NAMES: tests/report/report_names.cpp, which
# reads SA_NAME_FUZZ_ITERATIONS (pages, default 3) and SA_NAME_FUZZ_SEED.)
# (grep -a: a page with a NUL in a name is still text.)
# Exits 77 (CTest: skipped) when no chromium is installed.
set -uo pipefail
SA="$1"
DATA="$2"
ART="$3"
SAMPLE="$4"
NAMES="$5"
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
# An arena plan (planned offsets) with a budget sweep.
"$SAMPLE" "$GRAPH" "$ART/report-sweep.html" || fail "report_sample failed"
# A swap-only plan with a host budget that sends tensors to NVMe: the host
# memory plot shows both tiers.
cat > "$WORK/nvme.json" <<'JSON'
{"format": "swapadvisor-device", "version": 1, "name": "v100-with-nvme",
 "memory_bytes": 17179869184, "h2d_gbps": 12, "d2h_gbps": 12, "duplex_gbps": 20,
 "peak_tflops": 15.7, "hbm_gbps": 900,
 "nvme_read_gbps": 1.7, "nvme_write_gbps": 1.25, "nvme_latency_us": 50}
JSON
"$SA" report "$DATA/graphs/lstm-h1024-l2-b32-s50.json.gz" --device "$WORK/nvme.json" \
  --memory-fraction 0.4 --no-recompute --host-memory 160MiB --evaluations 12 --threads 2 --quiet \
  -o "$ART/report-nvme.html" > /dev/null || fail "swapadvisor report --host-memory failed"

# check_page PAGE NAME SWEEP: SWEEP is 1 when the page has a budget sweep.
check_page() {
  local page="$1" name="$2" sweep="$3"
  run_chromium "$WORK" --dump-dom "file://$page" > "$WORK/$name.dom" 2> "$WORK/$name.log"
  local rc=$?
  [ $rc -eq 0 ] || { tail -20 "$WORK/$name.log"; fail "$name: chromium exited with $rc"; }
  if grep -aE ':CONSOLE[:(]' "$WORK/$name.log"; then
    fail "$name: the page wrote to the console (above)"
  fi
  grep -aq 'data-errors=' "$WORK/$name.dom" && fail "$name: the page caught errors"
  grep -aq 'data-layout="ok"' "$WORK/$name.dom" \
    || fail "$name: a table overflows: $(grep -ao 'data-layout="[^"]*"' "$WORK/$name.dom" || echo 'no data-layout')"
  local drawn
  drawn="$(grep -ao 'data-drawn="timeline:[0-9]* memory:[0-9]* arena:[0-9]* sweep:[a-z0-9]* host:[a-z0-9]*"' "$WORK/$name.dom")" \
    || fail "$name: the plots did not draw (no data-drawn on <body>)"
  [[ "$drawn" =~ timeline:([0-9]+)\ memory:([0-9]+)\ arena:([0-9]+)\ sweep:([a-z0-9]+)\ host:([a-z0-9]+) ]] \
    || fail "$name: bad data-drawn: $drawn"
  local steps="${BASH_REMATCH[1]}" points="${BASH_REMATCH[2]}" tenancies="${BASH_REMATCH[3]}"
  local sweep_points="${BASH_REMATCH[4]}" host_points="${BASH_REMATCH[5]}"
  [ "$steps" -gt 0 ] || fail "$name: the timeline drew no steps"
  [ "$points" -gt 0 ] || fail "$name: the memory plot drew no points"
  [ "$tenancies" -gt 0 ] || fail "$name: the arena drew no tenancies"
  local canvases=3
  if [ "$sweep" = 1 ]; then
    [[ "$sweep_points" =~ ^[0-9]+$ ]] && [ "$sweep_points" -gt 0 ] \
      || fail "$name: the budget sweep drew no points ($drawn)"
    grep -aq '<section id="sweep-section" hidden' "$WORK/$name.dom" && fail "$name: the sweep section is hidden"
    canvases=4
  else
    [ "$sweep_points" = none ] || fail "$name: a sweep drew without a sweep ($drawn)"
    grep -aq '<section id="sweep-section" hidden' "$WORK/$name.dom" || fail "$name: the empty sweep section shows"
  fi
  # The host memory plot: drawn when the plan keeps anything on the host.
  if [ "$host_points" = none ]; then
    grep -aq '<div id="host-section" hidden' "$WORK/$name.dom" || fail "$name: an empty host plot shows"
  else
    [ "$host_points" -gt 0 ] || fail "$name: the host memory plot drew no points"
    canvases=$((canvases + 1))
  fi
  [ "$(grep -ao '<canvas id="[a-z-]*"[^>]*data-drawn' "$WORK/$name.dom" | wc -l)" -eq "$canvases" ] \
    || fail "$name: a canvas lacks data-drawn"
  local ms
  ms="$(grep -ao 'data-draw-ms="[0-9]*"' "$WORK/$name.dom" | grep -ao '[0-9]*')"
  echo "$name: drawn ($drawn) $ms ms after navigation"
}
check_page "$ART/report.html" report 0
# The ideal method's row is no-limit, explained in the note above the table.
grep -aq '<span class="ell" title="no-limit">no-limit</span>' "$WORK/report.dom" \
  || fail "report: no no-limit row in the comparison"
grep -aq 'no-limit: the ideal method' "$WORK/report.dom" || fail "report: no note on no-limit"
check_page "$WORK/plan-only.html" plan-only 0
check_page "$ART/report-sweep.html" sweep 1
# The page's self-test zooms, pans, hovers every lane, the arena and the
# sweep, and clicks the tables and a tenancy.
check_selftest() {
  local name="$1" sweep_tips="$2"
  grep -aEq "data-selftest=\"ok tooltips:[1-9][0-9]* arena:[1-9][0-9]* click:ok sweep:$sweep_tips\"" "$WORK/$name.dom" \
    || fail "$name: $(grep -ao 'data-selftest="[^"]*"' "$WORK/$name.dom" || echo 'did not finish')"
  echo "$name: $(grep -ao 'data-selftest="[^"]*"' "$WORK/$name.dom")"
}
check_page "$ART/report.html#selftest" selftest 0
check_selftest selftest none
check_page "$ART/report-sweep.html#selftest" selftest-sweep 1
check_selftest selftest-sweep '[1-9][0-9]*'
check_page "$ART/report-nvme.html" nvme 0
grep -aq 'live on NVMe' "$WORK/nvme.dom" || fail "nvme: the host plot's note does not name the NVMe tier"
grep -aq 'host:none' "$WORK/nvme.dom" && fail "nvme: no host memory plot"
check_page "$ART/report-nvme.html#selftest" selftest-nvme 0
check_selftest selftest-nvme none

# Hostile names: the page still parses and draws, and its self-test runs.
mkdir -p "$WORK/names"
"$NAMES" "$GRAPH" "$WORK/names" || fail "report_names failed"
for page in "$WORK"/names/names-*.html; do
  name="$(basename "$page" .html)"
  check_page "$page" "$name" 0
  grep -aq '<section id="stall-section"' "$WORK/$name.dom" || fail "$name: no stall section"
done
check_page "$WORK/names/names-0.html#selftest" names-selftest 0
check_selftest names-selftest none
cp "$WORK/names/names-0.html" "$ART/report-names.html"
# Times past 2^63 ns: drawn, zoomed and panned without a hang.
check_page "$WORK/names/long.html#selftest" long 0
check_selftest long none

screenshot() {
  rm -f "$2"
  run_chromium "$WORK" --hide-scrollbars --window-size="$3" --screenshot="$2" "file://$1" \
    > /dev/null 2> "$WORK/screenshot.log" || { tail -20 "$WORK/screenshot.log"; fail "screenshot of $1"; }
  [ -s "$2" ] || fail "no screenshot $2"
  echo "screenshot: $2"
}
screenshot "$ART/report.html" "$ART/report.png" 1400,2600
screenshot "$ART/report.html#selftest" "$ART/report-interaction.png" 1400,1250
screenshot "$ART/report-sweep.html" "$ART/report-sweep.png" 1400,3000
screenshot "$ART/report-names.html" "$ART/report-names.png" 1400,2600
screenshot "$ART/report-nvme.html" "$ART/report-nvme.png" 1400,2600
echo "PASS"
