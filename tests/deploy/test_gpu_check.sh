#!/usr/bin/env bash
# test_gpu_check.sh refuses|rehearsal|convcheck BUILD_DIR
#
# ctest checks of deploy/gpu-check.sh on machines without a GPU:
#   refuses    usage errors exit 2; --dry-run prints the plan; without an
#              NVIDIA driver (or with one that fails, or with a GPU but no
#              PyTorch that sees it) the check stops at the preflight with
#              exit 2 and one line naming the cause, and writes nothing.
#              Skipped (77) where a GPU is present.
#   rehearsal  --cpu-rehearsal runs every step (build dir as it is, database,
#              conv benchmarks under both policies, traces, push, fit,
#              validate, predict, conv comparison, the conv-by-conv and
#              matmul-by-matmul checks against PyTorch's own calls and the
#              traced steps against the conv and matmul sums) on the cpu device and
#              passes, with a complete report.
#   convcheck  --conv-check --cpu-rehearsal from the relocatable bundle of
#              this build (deploy/package.sh --bundle), with no PostgreSQL on
#              PATH: every step runs, every result is in results.jsonl, the
#              report is complete; a check stopped halfway leaves a report of
#              what completed.
set -uo pipefail

mode=${1:?usage: test_gpu_check.sh refuses|rehearsal BUILD_DIR}
build=${2:?usage: test_gpu_check.sh refuses|rehearsal BUILD_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
script=$repo/deploy/gpu-check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# ab_rows HEADING < report: the measured rows (a ratio in the last column) of the
# A/B table under the "### HEADING..." section.
ab_rows() {
    awk -v h="### $1" 'index($0, h) == 1 { on = 1; next } /^### / { on = 0 }
        on && /^\| .* \| (fwd|bwd_data|bwd_filter) \| fp32 \| .* \| [0-9.]+ \|$/ { n++ }
        END { print n + 0 }'
}
# steps_ok REPORT STEP...: each step's row in the report's table says ok (the
# row, when it does not).
steps_ok() {
    local report=$1 s
    shift
    for s in "$@"; do
        grep -q "^| $s | ok |" "$report" || { fail "report: step '$s' is not ok:"; grep "^| $s |" "$report"; }
    done
}
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
    for t in bash env sed awk grep cat date mkdir rm tr cut head tail uname nproc dirname seq sleep python3 cmake psql ls timeout; do
        p=$(command -v "$t") && ln -sf "$p" "$tmp/nobin/$t"
    done
    expect_refusal() { # LABEL PATTERN WORKDIR -- CMD...
        local label=$1 pattern=$2 w=$3
        shift 4
        expect 2 "$pattern" "$label" -- "$@" --work "$w"
        local lines
        lines=$("$@" --work "$w" 2>&1 | grep -c .)
        [ "$lines" -eq 1 ] || fail "$label: $lines lines of output, want one"
        [ ! -e "$w" ] || fail "$label: wrote $w"
    }
    expect_refusal "no driver" '^gpu-check: no NVIDIA GPU/driver: nvidia-smi is not installed' "$tmp/w1" -- \
        env PATH="$tmp/nobin" "$script" --no-build --build-dir "$build"
    expect_refusal "no driver, conv check" '^gpu-check: no NVIDIA GPU/driver' "$tmp/w1c" -- \
        env PATH="$tmp/nobin" "$script" --conv-check --no-build --build-dir "$build"
    # A driver that does not answer.
    mkdir -p "$tmp/broken"
    printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' >"$tmp/broken/nvidia-smi"
    chmod +x "$tmp/broken/nvidia-smi"
    expect_refusal "driver not answering" 'no NVIDIA GPU/driver: nvidia-smi -L failed: NVIDIA-SMI has failed' "$tmp/w2" -- \
        env PATH="$tmp/broken:$PATH" "$script" --no-build --build-dir "$build"
    # A GPU, but no PyTorch that sees it.
    mkdir -p "$tmp/gpu"
    printf '#!/bin/sh\ncase "$*" in *-L*) echo "GPU 0: Test GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)";; *) echo "0, Test GPU";; esac\n' >"$tmp/gpu/nvidia-smi"
    chmod +x "$tmp/gpu/nvidia-smi"
    expect_refusal "no PyTorch with CUDA" '^gpu-check: no PyTorch with CUDA: tried' "$tmp/w3" -- \
        env -u TRAINCAST_PYTHON PATH="$tmp/gpu:$PATH" "$script" --conv-check --no-build --build-dir "$build"
    expect_refusal "no such GPU index" '^gpu-check: no NVIDIA GPU/driver: there is no GPU 3' "$tmp/w4" -- \
        env PATH="$tmp/gpu:$PATH" "$script" --device cuda:3 --no-build --build-dir "$build"
    # A GPU and a PyTorch that sees it (faked: this torch is CPU-only), but a
    # driver the agent's CUDA runtime cannot use.
    mkdir -p "$tmp/py"
    printf '#!/bin/sh\necho "torch 2.11.0, torchvision 0.26.0, CUDA 13.0, cuDNN 91900, GPUs 1"\n' >"$tmp/py/python3"
    chmod +x "$tmp/py/python3"
    if "$build/agent/agent" info 2>&1 | grep -q 'driver version is insufficient'; then
        expect_refusal "driver older than the agent's runtime" '^gpu-check: the NVIDIA driver is older than the agent.s CUDA runtime' "$tmp/w5" -- \
            env TRAINCAST_PYTHON="$tmp/py/python3" PATH="$tmp/gpu:$PATH" "$script" --conv-check --no-build --build-dir "$build"
    fi
    ;;
rehearsal)
    out=$("$script" --cpu-rehearsal --no-build --build-dir "$build" --work "$tmp/w" 2>&1)
    st=$?
    report=$tmp/w/report.md
    if [ "$st" -ne 0 ]; then
        fail "gpu-check.sh --cpu-rehearsal exited $st:"; echo "$out" | tail -n 30; cat "$report" 2>/dev/null
    else
        echo "ok: every step passed"
        steps_ok "$report" "1 preflight" "2 build" "3 agent info" "4 database" "5 conv bench" "6 traces" \
            "7 fit" "8 predict" "9 conv check" "10 convs fp32" "10 matmuls fp32" "10 step fp32" \
            "10 step transformer"
        grep -q 'Result: every step ran' "$report" || fail "report lacks the result line"
        # Both policies were benchmarked, traced and compared, every item found.
        for p in heuristic exhaustive; do
            rows=$(grep -cE "^\| torchvision:[a-z0-9_]+@64 \| [0-9]+ \| $p \|" "$report")
            [ "$rows" -eq 8 ] || fail "conv check: $rows rows for policy $p, want 8 (4 CNNs x 2 batches)"
        done
        grep -E '^\| torchvision:' "$report" | awk -F'|' '{ split($7, a, "/"); if (a[1] + 0 != a[2] + 0 || a[2] + 0 == 0) bad++ } END { exit bad > 0 }' \
            || fail "conv check: some traces lack conv benchmarks"
        grep -q '^AMD\|^Intel\|(pytorch, heuristic, fp32)' "$report" || fail "report lacks the validate output"
        grep -q 'held out: resnet18, never traced' "$report" || fail "report lacks the prediction"
        # The dozen convs, each direction (no backward-data for the stem), with a ratio;
        # the dozen matmuls, every direction.
        rows=$(ab_rows "Conv by conv" <"$report")
        [ "$rows" -eq 35 ] || fail "conv vs torch: $rows conv directions, want 35 (12 convs x 3 - 1)"
        grep -qE '^A/B over 35 fp32 conv directions: median [0-9.]+' "$report" || fail "conv vs torch: no summary"
        rows=$(ab_rows "Matmul by matmul" <"$report")
        [ "$rows" -eq 36 ] || fail "matmul vs torch: $rows matmul directions, want 36 (12 matmuls x 3)"
        grep -qE '^A/B over 36 fp32 matmul directions: median [0-9.]+' "$report" || fail "matmul vs torch: no summary"
        grep -qE '^\| squeezenet1_1 \| 2 \| fp32 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' "$report" \
            || fail "conv vs torch: no traced step against the conv sum"
        [ -s "$tmp/w/predict-resnet18.svg" ] || fail "no prediction chart"
    fi
    ;;
convcheck)
    "$repo/deploy/package.sh" --bundle --build-dir "$build" --no-build --out "$tmp/agent.tar.gz" >/dev/null \
        || { echo "FAIL: deploy/package.sh --bundle failed"; exit 1; }
    mkdir -p "$tmp/b" "$tmp/nopg"
    tar -C "$tmp/b" -xzf "$tmp/agent.tar.gz"
    bundled=$(echo "$tmp"/b/traincast-agent-*/gpu-check.sh)
    # No PostgreSQL, psql or cmake on PATH: the conv check needs none.
    for t in bash env sed awk grep cat date mkdir rm mv tr cut head tail uname nproc dirname seq sleep python3 ls timeout sort wc sha256sum; do
        p=$(command -v "$t") && ln -sf "$p" "$tmp/nopg/$t"
    done
    out=$(cd "$tmp" && env PATH="$tmp/nopg" "$bundled" --conv-check --cpu-rehearsal 2>&1)
    st=$?
    w=$tmp/gpu-check
    if [ "$st" -ne 0 ]; then
        fail "bundle gpu-check.sh --conv-check --cpu-rehearsal exited $st:"; echo "$out" | tail -n 30; cat "$w/report.md" 2>/dev/null
    else
        echo "ok: the conv check ran from the bundle without PostgreSQL"
        steps_ok "$w/report.md" "1 facts" "2 routes" "3 convs fp32" "4 convs AMP" "5 matmuls fp32" \
            "6 matmuls AMP" "7 numerics" "8 step fp32" "9 step AMP" "10 step transformer"
        n=$(grep -c '"part": "conv"' "$w/results.jsonl")
        [ "$n" -eq 35 ] || fail "results.jsonl: $n conv lines, want 35 (12 convs x 3 directions - 1)"
        n=$(grep -c '"part": "matmul".*"status": "ok"' "$w/results.jsonl")
        [ "$n" -eq 36 ] || fail "results.jsonl: $n matmul lines measured on both sides, want 36 (12 matmuls x 3 directions)"
        grep -q '"part": "numerics", "matmul": .*"status": "ok"' "$w/results.jsonl" || fail "results.jsonl: no matmul numerics that pass"
        grep -q '"part": "facts"' "$w/results.jsonl" || fail "results.jsonl: no facts"
        grep -q '"part": "numerics".*"status": "ok"' "$w/results.jsonl" || fail "results.jsonl: no numerics that pass"
        grep -q '"part": "step".*"status": "ok"' "$w/results.jsonl" || fail "results.jsonl: no traced step"
        grep -qE '^A/B over 35 fp32 conv directions: median [0-9.]+' "$w/report.md" || fail "report: no conv summary"
        # The transformer's step: its conv and its matmuls summed, each against the profiler.
        grep -qE '^\| vit_b_16 \| 2 \| fp32 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' "$w/report.md" \
            || fail "report: no transformer step with its matmul sum against the profiler: $(grep -F '| vit_b_16 |' "$w/report.md")"
    fi
    # Stopped halfway (TERM during the conv step): a report of what completed.
    env PATH="$tmp/nopg" "$bundled" --conv-check --cpu-rehearsal --work "$tmp/cut" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 600); do
        grep -q '"part": "conv"' "$tmp/cut/results.jsonl" 2>/dev/null && break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    st=$?
    [ "$st" -ne 0 ] || fail "a check stopped halfway exited 0"
    grep -q 'Result: INTERRUPTED' "$tmp/cut/report.md" 2>/dev/null \
        && echo "ok: a check stopped halfway leaves a report" \
        || fail "a check stopped halfway left no report saying so"
    grep -q '^| 1 facts | ok |' "$tmp/cut/report.md" 2>/dev/null || fail "the cut report lacks the step that completed"
    ;;
*)
    echo "usage: test_gpu_check.sh refuses|rehearsal|convcheck BUILD_DIR" >&2
    exit 2
    ;;
esac
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
