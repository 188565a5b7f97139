#!/bin/sh
# Takes the README screenshots. It runs the real inspector binary under Xvfb at 1280×820
# with a fresh data directory and captures the live window: the start page of an empty
# capture (start.png), the list after sample traffic (list.png), a multi-selection with
# its context menu opened by a right-click (context-menu-live.png), the same window at
# 1000×650 (list-1000x650.png) and, restarted with the light theme in the data
# directory's window.json, a selected session side by side (detail-live.png). Then it
# renders the detail tabs of the stored sessions with the UI's software painter
# (detail.png, headers.png, raw.png, cookies.png, query-form.png, hex-body.png, image.png,
# timing.png, tls.png, find.png, context-menu.png, dark.png, stacked.png), the debugging
# panels, the Frames/WebSocket tabs over real engines, and the list paging a
# 1,000,000-session store (paged.png). Needs Xvfb, ImageMagick's import and xdotool.
# Usage (from the repository root):
#   sh docs/screenshots/take.sh
set -eu
OUT=$(pwd)/docs/screenshots
WORK=$(mktemp -d)
DISPLAY_NUM=${DISPLAY_NUM:-:99}
export LANG=C.UTF-8
cleanup() {
	[ -n "${INSP:-}" ] && kill "$INSP" 2>/dev/null || true
	[ -n "${XV:-}" ] && kill "$XV" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

go build -tags migrated_fynedo -o "$WORK/inspector" ./cmd/inspector
Xvfb "$DISPLAY_NUM" -screen 0 1280x820x24 >/dev/null 2>&1 &
XV=$!
export DISPLAY=$DISPLAY_NUM

# start runs the binary on the data directory and waits for its address.
start() {
	: >"$WORK/out.txt"
	INSPECTOR_DATA_DIR="$WORK/data" "$WORK/inspector" --listen 127.0.0.1:0 \
		--upstream-insecure localhost >"$WORK/out.txt" 2>"$WORK/err.txt" &
	INSP=$!
	i=0
	until grep -q '^listening on ' "$WORK/out.txt" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ]; then echo "inspector did not start:"; cat "$WORK/err.txt"; exit 1; fi
		sleep 0.1
	done
	ADDR=$(sed -n 's/^listening on //p' "$WORK/out.txt" | head -1)
	sleep 2 # the first frame
}
stop() {
	kill -TERM "$INSP"
	wait "$INSP" || true
	INSP=
}
# rowy N: a screen y inside the Nth row on screen at the compact density (rows are
# 19.7 px; the list follows the newest session, so its top row may be cut).
rowy() { echo $((100 + $1 * 20)); }

start
echo "inspector listening on $ADDR"
import -window root "$OUT/start.png"
# Three rounds of the sample traffic: more sessions than the list shows at once.
go build -o "$WORK/sample" ./docs/screenshots/sample
for round in 1 2 3; do
	"$WORK/sample" -proxy "$ADDR" -ca "$WORK/data/ca/root.pem" >/dev/null
done
sleep 1 # let the window's coalesced refresh and the store's writer catch up
import -window root "$OUT/list.png"
xdotool mousemove 700 "$(rowy 2)" click 1
sleep 0.5
xdotool keydown shift mousemove 700 "$(rowy 4)" click 1 keyup shift
sleep 0.5
xdotool mousemove 720 "$(rowy 3)" click 3
sleep 0.5
import -window root "$OUT/context-menu-live.png"
xdotool key Escape
WIN=$(xdotool search --name '^Inspector$' | head -1)
xdotool windowsize "$WIN" 1000 650
sleep 1
import -window root -crop 1000x650+0+0 "$OUT/list-1000x650.png"
stop

# The light theme from the data directory's preferences, a session selected.
python3 - "$WORK/data/window.json" <<'PY' || printf '{"window.theme":"light"}\n' >"$WORK/data/window.json"
import json, sys
p = sys.argv[1]
try:
    d = json.load(open(p))
except Exception:
    d = {}
d["window.theme"] = "light"
json.dump(d, open(p, "w"))
PY
start
xdotool mousemove 700 "$(rowy 1)" click 1
sleep 1
import -window root "$OUT/detail-live.png"
stop

INSPECTOR_SCREENSHOTS="$OUT" INSPECTOR_DATA_DIR="$WORK/data" \
	go test -tags migrated_fynedo -count=1 -run 'TestRenderScreenshots|TestRenderDebugScreenshots|TestRenderFramesScreenshots|TestRenderPagedScreenshot|TestRenderDiffScreenshots|TestRenderWireScreenshots' ./ui/
echo "screenshots in $OUT"
