#!/usr/bin/env bash
# test_gpu_check.sh refuses|rehearsal BUILD_DIR
#
# ctest checks of deploy/gpu-check.sh on machines without a GPU:
#   refuses    usage errors exit 2; --dry-run prints the plan; without an
#              NVIDIA driver (or with one that fails, or with a GPU but no
#              PyTorch that sees it) the check stops at the preflight with
#              exit 1, a message naming the cause and a report saying so.
#              Skipped (77) where a GPU is present.
#   rehearsal  --cpu-rehearsal runs every step (build dir as it is, database,
#              conv benchmarks under both policies, traces, push, fit,
#              validate, predict, conv comparison, the conv-by-conv check
#              against PyTorch's own calls and the traced step against the
#              conv sum) on the cpu device and passes, with a complete report.
set -uo pipefail

mode=${1:?usage: test_gpu_check.sh refuses|rehearsal BUILD_DIR}
build=${2:?usage: test_gpu_check.sh refuses|rehearsal BUILD_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
script=$repo/deploy/gpu-check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect STATUS PATTERN LABEL -- CMD...: runs CMD, checks its exit status and output.
expect() {
    local want=$1 pattern=$2 label=$3
    shift 4
    local out st
    out=$("$@" 2>&1)
    st=$?
    if [ "$st" -ne "$want" ]; then
        fail "$label: exit $st, want $want; output:"; echo "$out" | tail -n 20
    elif ! grep -qE -- "$pattern" <<<"$out"; then
        fail "$label: output lacks /$pattern/:"; echo "$out" | tail -n 20
    else
        echo "ok: $label"
    fi
}

case "$mode" in
refuses)
    expect 0 'deploy/gpu-check.sh|gpu-check.sh \[options\]' "--help" -- "$script" --help
    expect 2 "unknown option '--bogus'" "unknown option" -- "$script" --bogus
    expect 2 'needs 4 CNNs' "too few CNNs" -- "$script" --models resnet18,vgg11
    expect 2 'must be cuda:INDEX' "bad device" -- "$script" --device gpu0
    expect 0 '9 conv check' "--dry-run" -- "$script" --dry-run
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        echo "skipped: an NVIDIA GPU is present, so gpu-check.sh does not refuse here"
        [ "$failures" -eq 0 ] || exit 1
        exit 77
    fi
    # No driver at all: a PATH without nvidia-smi.
    mkdir -p "$tmp/nobin"
    for t in bash env sed awk grep cat date mkdir rm tr cut head tail uname nproc dirname seq sleep python3 cmake psql ls; do
        p=$(command -v "$t") && ln -sf "$p" "$tmp/nobin/$t"
    done
    expect 1 '^gpu-check: FAILED at 1 preflight: no NVIDIA GPU/driver: nvidia-smi is not installed' "no driver" -- \
        env PATH="$tmp/nobin" "$script" --no-build --build-dir "$build" --work "$tmp/w1"
    grep -q 'Result: FAILED.* at step "1 preflight".*no NVIDIA GPU/driver' "$tmp/w1/report.md" \
        && echo "ok: report of the refusal" || fail "report $tmp/w1/report.md lacks the refusal"
    # A driver that does not answer.
    mkdir -p "$tmp/broken"
    printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' >"$tmp/broken/nvidia-smi"
    chmod +x "$tmp/broken/nvidia-smi"
    expect 1 'no NVIDIA GPU/driver: nvidia-smi -L failed: NVIDIA-SMI has failed' "driver not answering" -- \
        env PATH="$tmp/broken:$PATH" "$script" --no-build --build-dir "$build" --work "$tmp/w2"
    # A GPU, but no PyTorch that sees it.
    mkdir -p "$tmp/gpu"
    printf '#!/bin/sh\ncase "$*" in *-L*) echo "GPU 0: Test GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)";; *) echo "0, Test GPU";; esac\n' >"$tmp/gpu/nvidia-smi"
    chmod +x "$tmp/gpu/nvidia-smi"
    expect 1 'no PyTorch with CUDA: tried' "no PyTorch with CUDA" -- \
        env -u TRAINCAST_PYTHON PATH="$tmp/gpu:$PATH" "$script" --no-build --build-dir "$build" --work "$tmp/w3"
    expect 1 'FAILED at 1 preflight: no NVIDIA GPU/driver: there is no GPU 3' "no such GPU index" -- \
        env PATH="$tmp/gpu:$PATH" "$script" --device cuda:3 --no-build --build-dir "$build" --work "$tmp/w4"
    ;;
rehearsal)
    out=$("$script" --cpu-rehearsal --no-build --build-dir "$build" --work "$tmp/w" 2>&1)
    st=$?
    report=$tmp/w/report.md
    if [ "$st" -ne 0 ]; then
        fail "gpu-check.sh --cpu-rehearsal exited $st:"; echo "$out" | tail -n 30; cat "$report" 2>/dev/null
    else
        echo "ok: every step passed"
        for s in "1 preflight" "2 build" "3 agent info" "4 database" "5 conv bench" "6 traces" "7 fit" "8 predict" "9 conv check" "10 conv vs torch"; do
            grep -q "^| $s | ok |" "$report" || fail "report: step '$s' is not ok"
        done
        grep -q 'Result: every step passed' "$report" || fail "report lacks the result line"
        # Both policies were benchmarked, traced and compared, every item found.
        for p in heuristic exhaustive; do
            rows=$(grep -cE "^\| torchvision:[a-z0-9_]+@64 \| [0-9]+ \| $p \|" "$report")
            [ "$rows" -eq 8 ] || fail "conv check: $rows rows for policy $p, want 8 (4 CNNs x 2 batches)"
        done
        grep -E '^\| torchvision:' "$report" | awk -F'|' '{ split($7, a, "/"); if (a[1] + 0 != a[2] + 0 || a[2] + 0 == 0) bad++ } END { exit bad > 0 }' \
            || fail "conv check: some traces lack conv benchmarks"
        grep -q '^AMD\|^Intel\|(pytorch, heuristic, fp32)' "$report" || fail "report lacks the validate output"
        grep -q 'held out: resnet18, never traced' "$report" || fail "report lacks the prediction"
        # The dozen convs, each direction (no backward-data for the stem), with a ratio.
        rows=$(grep -cE '^\| [a-z0-9_ ]+[0-9x/ +a-z]* \| (fwd|bwd_data|bwd_filter) \| fp32 \| [a-z-]+ \| .* \| [0-9.]+ \|$' "$report")
        [ "$rows" -eq 35 ] || fail "conv vs torch: $rows conv directions, want 35 (12 convs x 3 - 1)"
        grep -qE '^A/B over 35 fp32 conv directions: median [0-9.]+' "$report" || fail "conv vs torch: no summary"
        grep -qE '^\| squeezenet1_1 \| 2 \| fp32 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' "$report" \
            || fail "conv vs torch: no traced step against the conv sum"
        [ -s "$tmp/w/predict-resnet18.svg" ] || fail "no prediction chart"
    fi
    ;;
*)
    echo "usage: test_gpu_check.sh refuses|rehearsal BUILD_DIR" >&2
    exit 2
    ;;
esac
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
