#!/usr/bin/env bash
# setup.sh [--no-build] [--build-dir DIR] [--cuda AUTO|ON|OFF] [--werror] [-- CMAKE_ARGS...]
#
# Idempotent setup on Debian 12: installs every Debian package that the
# build, the tests and the demo need (and says which), then configures and
# builds traincast into build/. With everything present it installs nothing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build
cuda=AUTO
do_build=1
werror=""
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
    --no-build) do_build=0 ;;
    --build-dir) build_dir=$2; shift ;;
    --cuda) cuda=$2; shift ;;
    --werror) werror="-DTRAINCAST_WERROR=ON" ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# Build tools and libraries, the embedded PostgreSQL, PyTorch on CPU for the
# harness, what an agent's CPU device measures with (the caching allocator
# it preloads, tcmalloc, and jemalloc for comparison; OpenBLAS as the
# libblas.so.3 that PyTorch calls, see docs/ALLOCATORS.md and
# docs/CONV-BENCH.md), and the tools the tests use (clang for the fuzz
# target, iproute2 for network namespaces, GNU time for bench/memory.sh).
PACKAGES=(
    build-essential cmake pkg-config git ca-certificates
    libzmq3-dev libsodium-dev libprotobuf-c-dev protobuf-c-compiler
    libpq-dev postgresql postgresql-client
    libgsl-dev libcriterion-dev libdnnl-dev libonnx-dev libplplot-dev plplot-driver-cairo
    python3 python3-torch python3-torchvision python3-onnx python3-numpy
    libtcmalloc-minimal4 libjemalloc2 libopenblas0-openmp
    clang libclang-rt-14-dev iproute2 procps time
)

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${#missing[@]} Debian package(s): ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "setup: not root and no sudo; install these packages first: ${missing[*]}" >&2
            exit 1
        }
        sudo=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "setup: all ${#PACKAGES[@]} Debian packages are present"
fi

# PyTorch calls whatever libblas.so.3 the alternatives system selects; an
# agent measures with OpenBLAS (OpenMP threads, as PyTorch's own) rather than
# the reference BLAS, which is several times slower and noisier.
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
openblas=/usr/lib/$triplet/openblas-openmp/libblas.so.3
if [ -e "$openblas" ]; then
    current=$(update-alternatives --query "libblas.so.3-$triplet" 2>/dev/null | sed -n 's/^Value: //p')
    if [ "$current" != "$openblas" ]; then
        echo "setup: selecting OpenBLAS (OpenMP) as libblas.so.3 (was ${current:-none})"
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo=sudo
        $sudo update-alternatives --set "libblas.so.3-$triplet" "$openblas"
    fi
fi

[ "$do_build" -eq 1 ] || exit 0

echo "setup: configuring and building in $build_dir"
cmake -S "$repo" -B "$build_dir" -DTRAINCAST_CUDA="$cuda" $werror "${extra[@]}" >"$build_dir.configure.log" 2>&1 \
    || { cat "$build_dir.configure.log" >&2; exit 1; }
grep -E 'traincast:' "$build_dir.configure.log" || true
cmake --build "$build_dir" -j"$(nproc)"
echo "setup: built $build_dir/agent/agent and $build_dir/aggregator/aggregator"
