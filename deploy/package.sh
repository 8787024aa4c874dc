#!/usr/bin/env bash
# package.sh [--role agent|aggregator|all] [--build-dir DIR] [--cuda AUTO|ON|OFF]
#
# The Debian packages, one per role: traincast-agent and traincast-aggregator
# (binaries in /usr/bin, systemd units in /usr/lib/systemd/system, man pages,
# bash completion, docs, example configs in /usr/share/traincast/deploy).
# Installs what the role builds with (deploy/setup.sh --role), builds into
# build-pkg/ with the prefix /usr, and writes build-pkg/packages/*.deb.
# Install them with `sudo apt install ./build-pkg/packages/traincast-ROLE_*.deb`.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build-pkg
role=all
cuda=AUTO
while [ $# -gt 0 ]; do
    case "$1" in
    --role) role=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --cuda) cuda=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

"$repo/deploy/setup.sh" --role "$role" --cuda "$cuda" --build-dir "$build_dir" -- \
    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release -DTRAINCAST_TESTS=OFF
command -v help2man >/dev/null || echo "package.sh: help2man is missing: no man pages" >&2
rm -rf "$build_dir/packages"
(cd "$build_dir" && cpack -G DEB)
for deb in "$build_dir"/packages/*.deb; do
    echo "package: $deb ($(du -k "$deb" | cut -f1) KiB; installed $(dpkg-deb -f "$deb" Installed-Size) KiB)"
done
