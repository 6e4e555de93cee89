#!/usr/bin/env bash
# Build the desktop app folder with PyInstaller, then a .deb that installs it.
#
#   packaging/build.sh [OUT]          (from anywhere; OUT defaults to build/desktop/)
#
# Needs: the app's environment with PyInstaller (`pip install -e ".[gui]" pyinstaller`) as the
# `python` on PATH (or PYTHON=...), and dpkg-deb. Produces:
#   OUT/dist/bpe-workbench/                     the runnable folder (also serves the subcommands)
#   OUT/bpe-workbench_VERSION_ARCH.deb          /opt/bpe-workbench/ (the folder),
#                                               /usr/bin/bpe-workbench (a launcher),
#                                               the desktop entry, the icon, the AppStream metainfo
#
# The folder runs on the build machine's glibc or newer only (PyInstaller bundles the Python and
# the libraries of the machine it runs on): the script reads the newest GLIBC_x.y symbol version
# the bundle asks for, prints it and writes it into the package's Depends. Build on the oldest
# system you want to support (docs/development.md says which one this repository's build needs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${1:-$ROOT/build/desktop}" && cd "${1:-$ROOT/build/desktop}" && pwd)"
PYTHON="${PYTHON:-python}"
APP_ID="io.github.bpe_workbench.BpeWorkbench"

for tool in dpkg-deb objdump; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is needed (apt-get install dpkg binutils)" >&2; exit 2; }
done
"$PYTHON" -c "import PyInstaller, PySide6" 2>/dev/null || {
    echo "build.sh: $PYTHON needs PyInstaller and the gui extra: pip install -e \".[gui]\" pyinstaller" >&2
    exit 2
}

VERSION="$("$PYTHON" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$ROOT/pyproject.toml")"
ARCH="$(dpkg --print-architecture)"

echo "== PyInstaller: $OUT/dist/bpe-workbench/"
"$PYTHON" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$OUT/dist" --workpath "$OUT/work" "$ROOT/packaging/bpe-workbench.spec"
APP="$OUT/dist/bpe-workbench"

# The newest glibc symbol version any bundled ELF file (or the executable) needs.
GLIBC="$(find "$APP" -type f \( -name '*.so*' -o -name bpe-workbench \) -print0 \
    | xargs -0 sh -c 'objdump -T "$@" 2>/dev/null || true' objdump \
    | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
echo "== the bundle needs glibc >= $GLIBC"

echo "== .deb"
STAGE="$OUT/deb"
rm -rf "$STAGE"
install -d "$STAGE/DEBIAN" "$STAGE/opt" "$STAGE/usr/bin"
cp -a "$APP" "$STAGE/opt/bpe-workbench"
cat > "$STAGE/usr/bin/bpe-workbench" <<'LAUNCHER'
#!/bin/sh
# The desktop entry's Exec and the command line both start the bundled app.
exec /opt/bpe-workbench/bpe-workbench "$@"
LAUNCHER
chmod 0755 "$STAGE/usr/bin/bpe-workbench"
install -Dm644 "$ROOT/packaging/$APP_ID.desktop" "$STAGE/usr/share/applications/$APP_ID.desktop"
install -Dm644 "$ROOT/packaging/$APP_ID.svg" "$STAGE/usr/share/icons/hicolor/scalable/apps/$APP_ID.svg"
install -Dm644 "$ROOT/packaging/$APP_ID.metainfo.xml" "$STAGE/usr/share/metainfo/$APP_ID.metainfo.xml"
install -Dm644 "$ROOT/LICENSE" "$STAGE/usr/share/doc/bpe-workbench/copyright"

# Qt's xcb platform plugin loads these from the system (PyInstaller does not bundle them).
cat > "$STAGE/DEBIAN/control" <<CONTROL
Package: bpe-workbench
Version: $VERSION
Architecture: $ARCH
Maintainer: BPE Workbench developers <noreply@users.noreply.github.com>
Installed-Size: $(du -sk "$STAGE" | cut -f1)
Depends: libc6 (>= $GLIBC), libstdc++6, libexpat1, libxcb-cursor0, libxkbcommon-x11-0, libxcb-icccm4, libxcb-keysyms1, libxcb-shape0, libxcb-randr0, libxcb-render-util0, libxcb-image0, libegl1, libgl1, libfontconfig1, libdbus-1-3
Section: science
Priority: optional
Homepage: https://github.com/bpe-workbench/bpe-workbench
Description: train byte-level BPE tokenizers and watch every merge arrive
 A desktop window, a command line and a Python API for training byte-level BPE
 tokenizers on your own corpus, with live charts, a searchable merge list and
 exports that Hugging Face tokenizers and tiktoken load.
CONTROL

DEB="$OUT/bpe-workbench_${VERSION}_${ARCH}.deb"
# gzip: every dpkg reads it, and xz takes minutes over 400 MB for a fifth less.
dpkg-deb --root-owner-group -Zgzip --build "$STAGE" "$DEB" >/dev/null
echo "== $DEB ($(du -h "$DEB" | cut -f1); app folder $(du -sh "$APP" | cut -f1))"
