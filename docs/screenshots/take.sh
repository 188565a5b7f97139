#!/bin/sh
# Takes the README screenshots: runs the real inspector binary under Xvfb, sends sample
# traffic through it, captures the live window (list.png), then renders the detail tabs
# of the stored sessions with the UI's software painter (json-body.png, timing.png,
# tls.png, headers.png, raw.png, cookies.png, query-form.png, hex-body.png, image.png,
# dark.png), the debugging panels, the Frames/WebSocket tabs over real engines, and the
# list paging a 1,000,000-session store (paged.png).
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
Xvfb "$DISPLAY_NUM" -screen 0 1400x900x24 >/dev/null 2>&1 &
XV=$!
DISPLAY=$DISPLAY_NUM INSPECTOR_DATA_DIR="$WORK/data" "$WORK/inspector" --listen 127.0.0.1:0 \
	--upstream-insecure localhost >"$WORK/out.txt" 2>"$WORK/err.txt" &
INSP=$!
i=0
until grep -q '^listening on ' "$WORK/out.txt" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 300 ]; then echo "inspector did not start:"; cat "$WORK/err.txt"; exit 1; fi
	sleep 0.1
done
ADDR=$(sed -n 's/^listening on //p' "$WORK/out.txt" | head -1)
echo "inspector listening on $ADDR"
go run ./docs/screenshots/sample -proxy "$ADDR" -ca "$WORK/data/ca/root.pem"
sleep 1 # let the window's coalesced refresh and the store's writer catch up
DISPLAY=$DISPLAY_NUM import -window root "$OUT/list.png"
kill -TERM "$INSP"
wait "$INSP" || true
INSP=
INSPECTOR_SCREENSHOTS="$OUT" INSPECTOR_DATA_DIR="$WORK/data" \
	go test -tags migrated_fynedo -count=1 -run 'TestRenderScreenshots|TestRenderDebugScreenshots|TestRenderFramesScreenshots|TestRenderPagedScreenshot|TestRenderDiffScreenshots' ./ui/
echo "screenshots in $OUT"
