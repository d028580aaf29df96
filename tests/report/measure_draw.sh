#!/usr/bin/env bash
# How long a report page takes to open in headless Chromium: the time from
# navigation until its plots have drawn (the page's data-draw-ms), over N
# loads; and how long a redraw takes, of all the plots and of the arena alone.
# usage: measure_draw.sh REPORT.html [N]
set -euo pipefail
PAGE="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
N="${2:-5}"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/chromium.sh"
find_chromium || { echo "no chromium" >&2; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sa-measure.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
echo "$(basename "$PAGE"): $(du -h "$PAGE" | cut -f1), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$N"); do
  run_chromium "$WORK" --dump-dom "file://$PAGE#bench" 2> /dev/null > "$WORK/dom.html"
  attr() { grep -o "$1=\"[^\"]*\"" "$WORK/dom.html" | head -1 | cut -d'"' -f2; }
  echo "load $i: drawn $(attr data-draw-ms) ms after navigation (script started at" \
       "$(attr data-script-ms) ms; $(attr data-drawn)); a redraw takes $(attr data-redraw-ms) ms;" \
       "the arena's first draw $(attr data-arena-draw-ms) ms, a redraw $(attr data-arena-redraw-ms) ms"
done
