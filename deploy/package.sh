#!/usr/bin/env bash
# package.sh [--role agent|aggregator|all] [--build-dir DIR] [--cuda AUTO|ON|OFF]
# package.sh --bundle [--build-dir DIR] [--no-build] [--cuda AUTO|ON|OFF] [--out FILE]
#
# The Debian packages (binaries in /usr/bin, systemd units in
# /usr/lib/systemd/system, man pages, bash completion, docs, example configs
# in /usr/share/traincast/deploy), from one build:
#   traincast-agent-cpu   the agent for CPU-only machines: nothing of CUDA
#   traincast-agent       the agent with the CUDA backend, for GPU boxes
#                         (where the CUDA toolkit is found; not with --cuda OFF)
#   traincast-aggregator  the aggregator
#   traincast-common      the harness and the committed exports, which the
#                         others depend on
# --role agent or aggregator leaves the other out. Installs what the role
# builds with (deploy/setup.sh --role), builds into build-pkg/ with the
# prefix /usr, and writes build-pkg/packages/*.deb; Depends come from what
# each binary links, and a library no Debian package owns stops it.
# Install with `sudo apt install ./build-pkg/packages/traincast-{common,agent-cpu}_*.deb`
# (or agent, or aggregator).
#
# --bundle: instead, one relocatable tarball of the agent for machines with
# no root, no network and no packages (a bare GPU node: the driver, a Python
# with PyTorch, glibc): the agent with every library it needs that such a
# machine lacks (found through an RPATH relative to the binary), the
# tcmalloc it measures CPUs with, its harness, the weight-free exports (the
# CNN set, vit_b_16, swin_t) and the CNN set's conv list, deploy/gpu-check.sh and bench/gpu_conv_check.py.
# cuDNN is not in it: the agent loads the one PyTorch loads, at run time.
# Unpack it anywhere and run bin/agent, or gpu-check.sh --conv-check, as any
# user. Built in build-bundle/ (an agent-only Release build, with CUDA when
# the toolkit is found) unless --no-build takes --build-dir as it is;
# written to --out (default build-bundle/traincast-agent-VERSION-linux-ARCH.tar.gz).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=
role=all
cuda=AUTO
bundle=0
do_build=1
out=
while [ $# -gt 0 ]; do
    case "$1" in
    --role) role=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --cuda) cuda=$2; shift ;;
    --bundle) bundle=1 ;;
    --no-build) do_build=0 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$bundle" -eq 0 ]; then
    build_dir=${build_dir:-$repo/build-pkg}
    "$repo/deploy/setup.sh" --role "$role" --cuda "$cuda" --build-dir "$build_dir" -- \
        -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release -DTRAINCAST_TESTS=OFF
    command -v help2man >/dev/null || echo "package.sh: help2man is missing: no man pages" >&2
    rm -rf "$build_dir/packages"
    (cd "$build_dir" && cpack -G DEB)
    for deb in "$build_dir"/packages/*.deb; do
        echo "package: $deb ($(du -k "$deb" | cut -f1) KiB; installed $(dpkg-deb -f "$deb" Installed-Size) KiB)"
    done
    exit 0
fi

# ---- the relocatable agent bundle ---------------------------------------------------
die() { echo "package.sh: $*" >&2; exit 1; }
build_dir=${build_dir:-$repo/build-bundle}
case "$build_dir" in /*) ;; *) build_dir=$PWD/$build_dir ;; esac
if [ "$do_build" -eq 1 ]; then
    "$repo/deploy/setup.sh" --role agent --cuda "$cuda" --build-dir "$build_dir" -- \
        -DCMAKE_BUILD_TYPE=Release -DTRAINCAST_TESTS=OFF
fi
agent=$build_dir/agent/agent
[ -x "$agent" ] || die "$agent is missing: build first, or drop --no-build"
for tool in patchelf ldd objdump readelf strip tar gzip; do
    command -v "$tool" >/dev/null \
        || die "$tool is needed to make the bundle (Debian packages patchelf, binutils; deploy/setup.sh installs them)"
done
version=$("$agent" --version | awk 'NR == 1 { print $NF }')
arch=$(uname -m)
name=traincast-agent-$version-linux-$arch
out=${out:-$build_dir/$name.tar.gz}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/libexec" "$root/lib" "$root/share/traincast/harness" \
    "$root/share/traincast/models" "$root/share/traincast/check"

# glibc's own libraries are the machine's; everything else the agent loads
# at start comes with it.
is_glibc() {
    case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|\
    libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libmvec.so.*|libBrokenLocale.so.*) return 0 ;;
    esac
    return 1
}
cp "$agent" "$root/libexec/agent"
ldd "$agent" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r soname path; do
    is_glibc "$soname" || cp -L "$path" "$root/lib/$soname"
done
missing=$(ldd "$agent" | grep 'not found' || true)
[ -z "$missing" ] || die "the agent needs libraries this machine does not have: $(echo "$missing" | tr '\n' ' ')"
# The allocator the CPU device preloads (agent/devices/allocator.c finds it
# in ../lib).
tcmalloc=$(ldconfig -p | awk '/libtcmalloc_minimal\.so\.4 / && !found { print $NF; found = 1 }')
if [ -n "$tcmalloc" ]; then
    cp -L "$tcmalloc" "$root/lib/libtcmalloc_minimal.so.4"
    ldd "$tcmalloc" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r soname path; do
        is_glibc "$soname" || [ -e "$root/lib/$soname" ] || cp -L "$path" "$root/lib/$soname"
    done
else
    echo "package.sh: tcmalloc is not installed: the bundle's CPU device will measure with the system allocator" >&2
fi
# One RPATH on the binary (not RUNPATH: an RPATH also serves the libraries'
# own dependencies). The libraries keep theirs: tcmalloc in particular is
# preloaded into PyTorch's processes too, where its libstdc++ must be the
# machine's, not this bundle's.
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$root/libexec/agent"
for lib in "$root"/lib/*; do
    if readelf -d "$lib" | grep -E '\((RUNPATH|RPATH)\)' >/dev/null; then
        die "$lib has its own RUNPATH; the bundle's layout does not serve it"
    fi
done
chmod u+w "$root"/lib/*
strip --strip-debug "$root/libexec/agent" "$root"/lib/* 2>/dev/null || true

cp "$repo"/agent/harness/*.py "$root/share/traincast/harness/"
cp "$repo"/tests/data/*.onnx "$repo/tests/data/cnn_set.convs" "$root/share/traincast/models/"
cp "$repo/bench/gpu_conv_check.py" "$root/share/traincast/check/"
cp "$repo/deploy/gpu-check.sh" "$root/gpu-check.sh"
chmod +x "$root/gpu-check.sh"

# The newest glibc symbol version any file needs: the oldest glibc it runs on.
glibc_min=$(for f in "$root/libexec/agent" "$root"/lib/*; do objdump -T "$f" 2>/dev/null; done \
    | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)

cat >"$root/bin/agent" <<EOF
#!/bin/sh
# The traincast agent of this bundle: libexec/agent with the libraries of
# lib/, the harness and models of share/traincast, and the Python that has
# PyTorch (TRAINCAST_PYTHON, else the first python3 on PATH). Needs glibc
# $glibc_min or newer.
case \$0 in
*/*) bin=\${0%/*} ;;
*) bin=\$(command -v -- "\$0"); bin=\${bin%/*} ;;
esac
root=\$(cd "\$bin/.." && pwd -P) || exit 1
have=\$(getconf GNU_LIBC_VERSION 2>/dev/null) && have=\${have#glibc } && case \$have in
[0-9]*.[0-9]*)
    major=\${have%%.*} minor=\${have#*.} && minor=\${minor%%.*}
    if [ "\$major" -lt ${glibc_min%%.*} ] || { [ "\$major" -eq ${glibc_min%%.*} ] && [ "\$minor" -lt ${glibc_min#*.} ]; }; then
        echo "agent: this bundle needs glibc $glibc_min or newer; this machine has glibc \$have" >&2
        exit 2
    fi ;;
esac
: "\${TRAINCAST_HARNESS_DIR:=\$root/share/traincast/harness}"
: "\${TRAINCAST_DATA_DIR:=\$root/share/traincast/models}"
export TRAINCAST_HARNESS_DIR TRAINCAST_DATA_DIR
# The user's python3 (a module's, a conda environment's), not the system's:
# named, not run, so that the launcher costs nothing at start.
if [ -z "\${TRAINCAST_PYTHON:-}" ] && p=\$(command -v python3 2>/dev/null); then
    TRAINCAST_PYTHON=\$p
    export TRAINCAST_PYTHON
fi
exec "\$root/libexec/agent" "\$@"
EOF
chmod +x "$root/bin/agent"

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
cat >"$root/README.txt" <<EOF
traincast agent $version ($commit), relocatable bundle for Linux $arch

Runs unpacked anywhere, as any user, on a machine with glibc $glibc_min or
newer: every other library the agent needs is in lib/. For NVIDIA GPUs it
needs the NVIDIA driver and a Python whose PyTorch was built for CUDA; it
loads the cuDNN (and NVRTC, cuBLAS) that PyTorch loads, and says which in
\`bin/agent info\`. The agent runs the first python3 on PATH; set
TRAINCAST_PYTHON to another Python if that one has no PyTorch.

  bin/agent --help                 every command
  bin/agent info                   devices, library versions, the cuDNN loaded
  ./gpu-check.sh --conv-check      the GPU check (no database needed): the
                                   agent's conv times against PyTorch's own,
                                   fp32 and AMP, and one profiled training
                                   step; a report in ./gpu-check/report.md
  ./gpu-check.sh --help            its options

Results go to the aggregator with \`bin/agent push FILE --aggregator tcp://HOST:5555\`
from any machine that can reach it.
EOF
(cd "$root" && find . -type f ! -name MANIFEST | sort | xargs sha256sum) >"$root/MANIFEST"

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - "$name" | gzip -9 >"$out.tmp"
mv "$out.tmp" "$out"
kib=$(du -k "$out" | cut -f1)
echo "bundle: $out ($kib KiB; $(du -sk "$root" | cut -f1) KiB unpacked; $(ls "$root/lib" | wc -l) libraries; needs glibc $glibc_min)"
