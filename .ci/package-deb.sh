#!/bin/sh
# Builds the Debian package of Inspector from a built binary:
#   .ci/package-deb.sh BINARY OUTDIR
# Metadata (name, version, comment, categories) comes from FyneApp.toml; the package holds
# /usr/bin/inspector, a desktop entry and the 256x256 icon. Prints the .deb's path.
set -eu
bin=$1 out=$2
toml() { sed -n "s/^ *$1 *= *\"\{0,1\}\([^\"]*\)\"\{0,1\} *\$/\1/p" FyneApp.toml | head -n1; }
version=$(toml Version) build=$(toml Build) comment=$(toml Comment) generic=$(toml GenericName)
[ -n "$version" ] || { echo "package-deb: no Version in FyneApp.toml" >&2; exit 1; }
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
install -D -m 0755 "$bin" "$root/usr/bin/inspector"
install -D -m 0644 assets/icon.png "$root/usr/share/icons/hicolor/256x256/apps/inspector.png"
install -d "$root/usr/share/applications" "$root/DEBIAN"
cat > "$root/usr/share/applications/inspector.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=Inspector
GenericName=$generic
Comment=$comment
Exec=inspector
Icon=inspector
Terminal=false
Categories=Development;Network;
Keywords=http;https;proxy;debugging;har;mitm;
DESKTOP
size=$(du -sk "$root/usr" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: inspector
Version: $version-$build
Architecture: $arch
Maintainer: Inspector project <inspector@invalid.invalid>
Installed-Size: $size
Depends: libc6, libgl1, libx11-6, libxcursor1, libxrandr2, libxinerama1, libxi6, libxxf86vm1
Recommends: libnss3-tools, ca-certificates
Section: net
Priority: optional
Homepage: https://inspector.invalid/
Description: $generic
 $comment.
 A local MITM proxy with a desktop window, a headless mode and a control API.
CONTROL
mkdir -p "$out"
deb="$out/inspector_${version}-${build}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
