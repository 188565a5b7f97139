#!/bin/sh
# Smoke tests of the packages:
#   .ci/package-smoke.sh deb FILE.deb    unpacks into a scratch root (dpkg -x), checks the
#                                        desktop entry and icon, starts the binary headless
#                                        and waits for "listening on"
#   .ci/package-smoke.sh exe FILE.exe SHIM.dll
#                                        checks the icon, version info and manifest resources,
#                                        then runs `inspector help` under Wine in a throwaway
#                                        prefix
set -eu
fail() { echo "package-smoke: $*" >&2; exit 1; }
kind=$1 file=$2
[ -f "$file" ] || fail "$file does not exist"
scratch=$(mktemp -d)
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$scratch"; }
trap cleanup EXIT
case $kind in
deb)
	dpkg-deb --info "$file" | grep -q "Package: inspector" || fail "$file: no inspector control file"
	dpkg -x "$file" "$scratch/root"
	for f in usr/bin/inspector usr/share/applications/inspector.desktop usr/share/icons/hicolor/256x256/apps/inspector.png; do
		[ -s "$scratch/root/$f" ] || fail "$file lacks /$f"
	done
	grep -q '^Exec=inspector$' "$scratch/root/usr/share/applications/inspector.desktop" || fail "desktop entry has no Exec=inspector"
	if command -v desktop-file-validate >/dev/null; then
		desktop-file-validate "$scratch/root/usr/share/applications/inspector.desktop"
	fi
	mkfifo "$scratch/out"
	"$scratch/root/usr/bin/inspector" --headless --listen 127.0.0.1:0 --data-dir "$scratch/data" >"$scratch/out" 2>"$scratch/err" &
	pid=$!
	line=$(timeout 60 head -n1 "$scratch/out") || fail "the packaged binary printed nothing within 60s: $(cat "$scratch/err")"
	case $line in
	"listening on 127.0.0.1:"*) echo "deb ok: $line" ;;
	*) fail "the packaged binary printed '$line', want 'listening on ...'" ;;
	esac
	;;
exe)
	shim=$3
	objdump=x86_64-w64-mingw32-objdump
	$objdump -h "$file" | grep -q '\.rsrc' || fail "$file has no resource section (icon, version, manifest)"
	x86_64-w64-mingw32-objcopy -O binary --only-section=.rsrc "$file" "$scratch/rsrc"
	# The icon is PNG-encoded, the version info UTF-16, the manifest UTF-8 XML.
	LC_ALL=C grep -qa 'PNG' "$scratch/rsrc" || fail "$file has no icon resource"
	LC_ALL=C grep -qa 'requestedExecutionLevel level="asInvoker"' "$scratch/rsrc" || fail "$file has no application manifest"
	LC_ALL=C tr -d '\000' <"$scratch/rsrc" | grep -qa 'VS_VERSION_INFO' || fail "$file has no version info"
	export WINEPREFIX="$scratch/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="bcryptprimitives=n;mscoree,mshtml=" DISPLAY=
	timeout 180 wineboot -i >/dev/null 2>&1 || fail "wineboot failed"
	timeout 120 wineserver -w
	cp "$shim" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
	out=$(timeout 120 wine "$file" help 2>&1) || fail "inspector help under Wine failed: $out"
	echo "$out" | grep -q "ca install" || fail "inspector help printed: $out"
	timeout 60 wineserver -k || true
	echo "exe ok: $(echo "$out" | head -n1)"
	;;
*) fail "unknown kind $kind (deb or exe)" ;;
esac
