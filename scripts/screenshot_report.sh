#!/usr/bin/env bash
# Screenshot of a tune-report HTML page with headless Chromium (Debian's `chromium` package):
#   scripts/screenshot_report.sh REPORT.html OUT.png [WIDTH] [HEIGHT]
# WIDTH x HEIGHT is the window in CSS pixels (default 1500 x 2400); the page is drawn at
# device scale 1, without network access (the report is self-contained), into OUT.png.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: $0 REPORT.html OUT.png [WIDTH] [HEIGHT]" >&2
    exit 2
fi
report=$1
out=$2
width=${3:-1500}
height=${4:-2400}
if [[ ! -f $report ]]; then
    echo "$report: no such file" >&2
    exit 1
fi
browser=""
for candidate in chromium chromium-browser google-chrome chrome-headless-shell; do
    if command -v "$candidate" >/dev/null 2>&1; then
        browser=$candidate
        break
    fi
done
if [[ -z $browser ]]; then
    echo "no headless Chromium found: install Debian's chromium package (apt-get install chromium)" >&2
    exit 1
fi
report_path=$(realpath "$report")
out_path=$(realpath -m "$out")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: Chromium refuses to run as root with its sandbox (containers, CI).
extra=()
if [[ $(id -u) -eq 0 ]]; then
    extra+=(--no-sandbox)
fi
"$browser" --headless --disable-gpu "${extra[@]}" --hide-scrollbars --user-data-dir="$profile" \
    --no-first-run --disable-extensions --force-device-scale-factor=1 \
    --window-size="$width,$height" --screenshot="$out_path" "file://$report_path" \
    >/dev/null 2>"$profile/chromium.log" || {
    cat "$profile/chromium.log" >&2
    exit 1
}
if [[ ! -s $out_path ]]; then
    cat "$profile/chromium.log" >&2
    echo "chromium wrote no screenshot to $out_path" >&2
    exit 1
fi
echo "Wrote $out_path"
