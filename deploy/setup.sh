#!/usr/bin/env bash
# setup.sh [--role agent|aggregator|all] [--no-build] [--build-dir DIR] [--cuda AUTO|ON|OFF]
#          [--werror] [-- CMAKE_ARGS...]
#
# Idempotent setup on Debian 12: installs the Debian packages a machine of
# that role needs (and says which), then configures and builds traincast
# into build/. With everything present it installs nothing.
#   --role agent       build the agent only, with what it measures with
#                      (oneDNN, PyTorch on CPU, tcmalloc, OpenBLAS)
#   --role aggregator  build the aggregator only (libpq, GSL, PLplot, psql)
#   --role all         both, and what the tests, the demo and the benchmarks
#                      need (PostgreSQL server, Criterion, clang, ...); the
#                      default, and what deploy/test.sh runs
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build
cuda=AUTO
role=all
do_build=1
werror=""
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
    --role) role=$2; shift ;;
    --no-build) do_build=0 ;;
    --build-dir) build_dir=$2; shift ;;
    --cuda) cuda=$2; shift ;;
    --werror) werror="-DTRAINCAST_WERROR=ON" ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# What every role builds with: compiler, CMake, ZeroMQ, libsodium (CURVE keys,
# SHA-256), jansson (JSON), protobuf-c, the ONNX schema, help2man for the man
# pages.
BUILD=(
    build-essential cmake pkg-config ca-certificates
    libzmq3-dev libsodium-dev libjansson-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev
    help2man
)
# The agent: oneDNN, PyTorch on CPU for the harness, and what its CPU device
# measures with (the caching allocator it preloads, tcmalloc, and jemalloc
# for comparison; OpenBLAS as the libblas.so.3 that PyTorch calls, see
# docs/reports/allocators.md and docs/conv-benchmarks.md).
AGENT=(
    libdnnl-dev python3 python3-torch python3-torchvision python3-onnx python3-numpy
    libtcmalloc-minimal4 libjemalloc2 libopenblas0-openmp
)
# The aggregator: libpq, GSL, PLplot with its Cairo driver, psql.
AGGREGATOR=(libpq-dev postgresql-client libgsl-dev libplplot-dev plplot-driver-cairo)
# Tests, demo and benchmarks: the embedded PostgreSQL server, Criterion,
# clang for the fuzz targets, iproute2 for network namespaces, GNU time for
# bench/memory.sh, git, patchelf for the relocatable agent bundle
# (deploy/package.sh --bundle), chromium to render the comparison page
# (aggregator report --html) in a headless browser.
DEV=(git postgresql libcriterion-dev clang libclang-rt-14-dev iproute2 procps time patchelf
     chromium)

case "$role" in
agent) PACKAGES=("${BUILD[@]}" "${AGENT[@]}"); roles=(-DTRAINCAST_AGENT=ON -DTRAINCAST_AGGREGATOR=OFF) ;;
aggregator) PACKAGES=("${BUILD[@]}" "${AGGREGATOR[@]}")
            roles=(-DTRAINCAST_AGENT=OFF -DTRAINCAST_AGGREGATOR=ON); cuda=OFF ;;
all) PACKAGES=("${BUILD[@]}" "${AGENT[@]}" "${AGGREGATOR[@]}" "${DEV[@]}")
     roles=(-DTRAINCAST_AGENT=ON -DTRAINCAST_AGGREGATOR=ON) ;;
*) echo "setup.sh: --role must be agent, aggregator or all (got '$role')" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${#missing[@]} Debian package(s) for role $role: ${missing[*]}"
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
    echo "setup: all ${#PACKAGES[@]} Debian packages of role $role are present"
fi

# PyTorch calls whatever libblas.so.3 the alternatives system selects; an
# agent measures with OpenBLAS (OpenMP threads, as PyTorch's own) rather than
# the reference BLAS, which is several times slower and noisier.
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
openblas=/usr/lib/$triplet/openblas-openmp/libblas.so.3
if [ "$role" != aggregator ] && [ -e "$openblas" ]; then
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
cmake -S "$repo" -B "$build_dir" -DTRAINCAST_CUDA="$cuda" "${roles[@]}" $werror "${extra[@]}" \
    >"$build_dir.configure.log" 2>&1 \
    || { cat "$build_dir.configure.log" >&2; exit 1; }
grep -E 'traincast:' "$build_dir.configure.log" || true
cmake --build "$build_dir" -j"$(nproc)"
case "$role" in
agent) echo "setup: built $build_dir/agent/agent" ;;
aggregator) echo "setup: built $build_dir/aggregator/aggregator" ;;
*) echo "setup: built $build_dir/agent/agent and $build_dir/aggregator/aggregator" ;;
esac
