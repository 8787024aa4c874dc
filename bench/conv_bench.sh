#!/usr/bin/env bash
# bench/conv_bench.sh: how fast `agent bench` gets through the CNN set, and
# how much the planner's deduplication saves.
#
#   1. exports the conv layers of the CNN set from torchvision (bench/
#      torchvision_convs.py) into a conv list;
#   2. dedup ratio: `agent bench --dry-run` over several batch lists
#      (unique (config, batch, direction) items vs conv layers x batches x
#      the passes each layer needs);
#   3. throughput: measures every item of the CNN set at one batch size on
#      the cpu device into a fresh result file and reports items per second;
#   4. writes the figures with the machine's details to docs/reports/conv-benchmark-throughput.md.
#
# Environment: BUILD_DIR (default build), BATCH (8), THREADS (0 = all logical
# CPUs), BUDGET_MS (250, per item), DEVICE (cpu), OUT (docs/reports/conv-benchmark-throughput.md),
# WORK (a temporary directory), MODELS (default: the whole CNN set).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
agent=$build/agent/agent
batch=${BATCH:-8}
threads=${THREADS:-0}
budget=${BUDGET_MS:-250}
device=${DEVICE:-cpu}
out=${OUT:-$repo/docs/reports/conv-benchmark-throughput.md}
python=${TRAINCAST_PYTHON:-/usr/bin/python3}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"

if [[ ! -x $agent ]]; then
    echo "conv_bench: $agent not found; build first (cmake -S . -B build && cmake --build build)" >&2
    exit 2
fi

convs=$work/cnn.convs
echo "conv_bench: exporting conv lists from torchvision into $convs" >&2
# shellcheck disable=SC2086
"$python" "$repo/bench/torchvision_convs.py" "$convs" ${MODELS:-} 2>"$work/export.log"
models=$(grep -c '^model ' "$convs")

dedup_rows=""
for batches in 8 32 1,8,32 8..256 1..512; do
    line=$("$agent" bench --convs "$convs" --batches "$batches" --device "$device" \
        --threads "$threads" --dry-run | grep '^plan:')
    # plan: M models, L conv layers, B batch sizes: P layer passes -> U unique items (C configs; R% of the passes)
    read -r layers nb passes items configs < <(sed -E \
        's/^plan: [0-9]+ models?, ([0-9]+) conv layers, ([0-9]+) batch sizes?: ([0-9]+) layer passes -> ([0-9]+) unique items \(([0-9]+) configs.*/\1 \2 \3 \4 \5/' <<<"$line")
    ratio=$(awk -v u="$items" -v p="$passes" 'BEGIN { printf "%.3f", u / p }')
    lb=$((layers * nb))
    dedup_rows+="| $batches | $nb | $layers | $lb | $passes | $configs | $items | $ratio |"$'\n'
done

load_before=$(bench_loadavg)
echo "conv_bench: measuring the CNN set at batch $batch on $device (budget ${budget} ms per item)" >&2
result=$work/bench.tcr
rm -f "$result"
start=$(date +%s)
TRAINCAST_PROGRESS=${TRAINCAST_PROGRESS:-plain} "$agent" bench --convs "$convs" --batches "$batch" \
    --device "$device" --threads "$threads" --budget-ms "$budget" --out "$result" \
    >"$work/bench.out" 2>"$work/bench.err" || {
    echo "conv_bench: agent bench failed:" >&2
    tail -20 "$work/bench.err" >&2
    exit 1
}
end=$(date +%s)
load_after=$(bench_loadavg)
summary=$(grep '^measured' "$work/bench.out")
plan=$(grep '^plan:' "$work/bench.out")
dev=$(grep '^device:' "$work/bench.out")
info=$("$agent" info --threads "$threads")

mkdir -p "$(dirname "$out")"
{
    echo "# Conv benchmark throughput and deduplication"
    echo
    echo "Produced by \`bench/conv_bench.sh\` on $(date -u +%Y-%m-%d) (UTC). The figures are from a"
    echo "shared, noisy machine: the dedup counts are exact, the"
    echo "throughput will differ run to run and machine to machine; re-run the script to update them."
    echo
    echo "## Machine"
    echo
    echo "- CPU: $(bench_cpu_model), $(nproc) logical CPUs available; memory $(bench_mem)"
    echo "- OS: $(uname -sr)"
    echo "- load average (1, 5, 15 min) before the run: $load_before; after: $load_after"
    echo
    echo '```'
    echo "$info"
    echo '```'
    echo
    echo "## Deduplication over the CNN set ($models models)"
    echo
    echo "Layer passes are conv layers x batch sizes x the directions each layer needs (3, or 2"
    echo "for a conv that reads the network input, which needs no backward-data pass). Items are"
    echo "the distinct (config, batch, direction) triples the agent measures."
    echo
    echo "| batches | batch sizes | conv layers | layers x batches | layer passes | distinct configs | items | items / passes |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s' "$dedup_rows"
    echo
    echo "## Throughput: the whole CNN set at batch $batch"
    echo
    echo "\`agent bench --convs <CNN set> --batches $batch --device $device --threads $threads --budget-ms $budget\`"
    echo "(policy heuristic, fp32, NCHW; warm-up until two successive times agree within 5 %, then"
    echo "at least 5 repetitions, until the median's 95 % CI is within 2 % or the budget ends):"
    echo
    echo "- $dev"
    echo "- $plan"
    echo "- $summary"
    echo "- wall time of the run: $((end - start)) s"
    echo
    echo "Items per second is dominated by the conv time itself (every item runs at least 2"
    echo "warm-ups and 5 repetitions); the time budget bounds the repetitions of fast items."
} >"$out"
echo "conv_bench: wrote $out" >&2
echo "$summary"
