#!/usr/bin/env bash
# bench.sh [--only NAME,...] [--quick] [--list] [--out FILE] [--build-dir DIR]
#          [--accuracy-args "OPTIONS"]
#
# Runs the benchmarks under bench/ and writes docs/BENCHMARKS.md: the
# machine (CPU, cores, memory, kernel, library versions), then one section
# per benchmark with its date, duration and the load average while it ran.
# Benchmarks compare two things measured in the same run (A B A B ...) or
# report distributions, so their figures hold on a noisy machine.
#
#   --only NAME,...   run these benchmarks only (--list names them); the
#                     sections of the others are kept from the previous file
#   --quick           a smoke run: small subsets, few repetitions (10 to 15
#                     minutes on 2 cores); its sections say so. Scripts that keep their own
#                     detailed report (docs/BENCH-CONV.md, ...) write it to
#                     the work directory instead, so a smoke run never
#                     replaces a full one there
#   --out FILE        [docs/BENCHMARKS.md]
#   --build-dir DIR   [build]; built first when the binaries are missing
#   --accuracy-args "OPTIONS"
#                     more options for bench/accuracy.sh in a full run, e.g.
#                     "--time-budget 90" or "--models resnet18,alexnet,..."
#
# A full run takes hours on a 2-core machine (the accuracy study most of it;
# it is resumable: rerun to continue). Exit status 1 when a benchmark failed
# (its section says why); the others still run.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/docs/BENCHMARKS.md
build=$repo/build
only=
quick=0
accuracy_args=

all=(predict memory collection transport load conv import export variability allocators faithfulness accuracy bundle)
declare -A title=(
    [predict]="Predict latency on a large database"
    [memory]="Memory: aggregator while ingesting, agent while benchmarking"
    [collection]="Benchmark collection cost: deduplication"
    [transport]="Ingest: end to end against raw COPY"
    [load]="Load: 20 agents at once through one aggregator"
    [conv]="Conv benchmark throughput and deduplication"
    [import]="Model import time"
    [export]="Model export time"
    [variability]="Run-to-run variability of training time"
    [allocators]="Allocators: speed and steadiness of a CPU device"
    [faithfulness]="Faithfulness: conv benchmarks against PyTorch's own time"
    [accuracy]="Accuracy study (CPU devices)"
    [bundle]="The relocatable agent bundle: size and start-up"
)
declare -A script=(
    [predict]=bench/predict_latency.sh [memory]=bench/memory.sh
    [collection]=bench/collection_cost.sh [transport]=bench/transport.sh [load]=bench/load.sh
    [conv]=bench/conv_bench.sh [import]=bench/model_import.sh [export]=bench/model_export.sh
    [variability]=bench/trace_variability.sh [allocators]=bench/allocators.py
    [faithfulness]=bench/faithfulness.py [accuracy]=bench/accuracy.sh
    [bundle]=bench/bundle_size.sh
)

while [ $# -gt 0 ]; do
    case "$1" in
    --only) only=$2; shift ;;
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --build-dir) build=$2; shift ;;
    --accuracy-args) accuracy_args=$2; shift ;;
    --list)
        for n in "${all[@]}"; do printf '%-12s %-28s %s\n' "$n" "${script[$n]}" "${title[$n]}"; done
        exit 0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
case "$build" in /*) ;; *) build=$PWD/$build ;; esac

selected=("${all[@]}")
if [ -n "$only" ]; then
    IFS=, read -r -a selected <<<"$only"
    for n in "${selected[@]}"; do
        [ -n "${script[$n]:-}" ] || { echo "bench.sh: unknown benchmark '$n'; --list names them" >&2; exit 2; }
    done
fi

if [ ! -x "$build/agent/agent" ] || [ ! -x "$build/aggregator/aggregator" ] || [ ! -x "$build/bench/tc-gen-predict-db" ] || [ ! -x "$build/bench/tc-dump-results" ]; then
    echo "bench.sh: building into $build" >&2
    "$repo/deploy/setup.sh" --build-dir "$build"
fi
export BUILD_DIR=$build TRAINCAST_BUILD_DIR=$build TRAINCAST_PROGRESS=plain
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"

mode=$([ "$quick" -eq 1 ] && echo quick || echo full)
work=$build/bench-out/$mode
mkdir -p "$work/sections" "$work/logs"

# run_NAME: runs the benchmark, leaves its Markdown in $work/NAME.md and the
# command line in $cmd. Quick mode writes the detailed reports of the older
# scripts into $work; full mode into their docs/ files.
cmd=
run_predict() {
    cmd="bench/predict_latency.sh"
    bench/predict_latency.sh --out "$work/predict.md"
}
run_memory() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/memory.sh --messages 500 --batches 8"
        bench/memory.sh --messages 500 --batches 8 --out "$work/memory.md"
    else
        cmd="bench/memory.sh"
        bench/memory.sh --out "$work/memory.md"
    fi
}
run_collection() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/collection_cost.sh --batch 2 --models resnet18,resnet34 --rounds 2"
        bench/collection_cost.sh --batch 2 --models resnet18,resnet34 --rounds 2 --out "$work/collection.md"
    else
        cmd="bench/collection_cost.sh --rounds 3"
        bench/collection_cost.sh --rounds 3 --out "$work/collection.md"
    fi
}
run_transport() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/transport.sh --messages 10 --rounds 2"
        bench/transport.sh --messages 10 --rounds 2 --out "$work/transport.md" >/dev/null
    else
        cmd="bench/transport.sh (docs/transport-benchmark.md)"
        bench/transport.sh --out docs/transport-benchmark.md >/dev/null
        cp docs/transport-benchmark.md "$work/transport.md"
    fi
}
run_load() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/load.sh --quick"
        bench/load.sh --quick --out "$work/load.md" >/dev/null
    else
        cmd="bench/load.sh (docs/load-benchmark.md)"
        bench/load.sh --out docs/load-benchmark.md >/dev/null
        cp docs/load-benchmark.md "$work/load.md"
    fi
}
run_conv() {
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS='squeezenet1_1 shufflenet_v2_x0_5' BUDGET_MS=50 bench/conv_bench.sh"
        MODELS="squeezenet1_1 shufflenet_v2_x0_5" BUDGET_MS=50 WORK=$work/conv OUT=$work/conv.md bench/conv_bench.sh >/dev/null
    else
        cmd="bench/conv_bench.sh (docs/BENCH-CONV.md)"
        WORK=$work/conv OUT=docs/BENCH-CONV.md bench/conv_bench.sh >/dev/null
        cp docs/BENCH-CONV.md "$work/conv.md"
    fi
}
run_import() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/model_import.sh BUILD_DIR 1"
        bench/model_import.sh "$build" 1 >"$work/import.md"
    else
        cmd="bench/model_import.sh (docs/bench-model-import.md)"
        bench/model_import.sh "$build" 5 >"$work/import.md"
        cp "$work/import.md" docs/bench-model-import.md
    fi
}
run_export() {
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS=squeezenet1_1,resnet18,mobilenet_v2 bench/model_export.sh"
        MODELS=squeezenet1_1,resnet18,mobilenet_v2 bench/model_export.sh >"$work/export.md"
    else
        cmd="bench/model_export.sh (docs/bench-model-export.md)"
        bench/model_export.sh >"$work/export.md"
        cp "$work/export.md" docs/bench-model-export.md
    fi
}
run_variability() {
    rm -f "$work/variability.tcr"*
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS=squeezenet1_1 BATCHES=2,8 INPUT_SIZE=64 REPEAT=3 WARMUP=1 ITERS=3 THREADS=1 bench/trace_variability.sh"
        MODELS=squeezenet1_1 BATCHES=2,8 INPUT_SIZE=64 REPEAT=3 WARMUP=1 ITERS=3 THREADS=1 \
            OUT=$work/variability.tcr DOC=$work/variability.md bench/trace_variability.sh >/dev/null
    else
        cmd="THREADS=$(nproc),1 bench/trace_variability.sh (docs/VARIABILITY.md)"
        THREADS=$(nproc),1 OUT=$work/variability.tcr DOC=docs/VARIABILITY.md bench/trace_variability.sh >/dev/null
        cp docs/VARIABILITY.md "$work/variability.md"
    fi
}
run_allocators() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/allocators.py --rounds 1 --iters 3 --model squeezenet1_1"
        "$bench_python" bench/allocators.py --rounds 1 --iters 3 --model squeezenet1_1 \
            --build-dir "$build" --out "$work/allocators.md"
    else
        cmd="bench/allocators.py (docs/ALLOCATORS.md)"
        "$bench_python" bench/allocators.py --build-dir "$build" --out docs/ALLOCATORS.md &&
            cp docs/ALLOCATORS.md "$work/allocators.md"
    fi
}
run_faithfulness() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/faithfulness.py --models resnet18,shufflenet_v2_x1_0 --rounds 1 --budget-ms 40"
        "$bench_python" bench/faithfulness.py --models resnet18,shufflenet_v2_x1_0 --rounds 1 \
            --budget-ms 40 --max-reps 10 --build-dir "$build" --work "$work/faithfulness" \
            --out "$work/faithfulness.md"
    else
        cmd="bench/faithfulness.py (docs/FAITHFULNESS.md, docs/faithfulness.png)"
        "$bench_python" bench/faithfulness.py --build-dir "$build" --work "$work/faithfulness" \
            --out docs/FAITHFULNESS.md --points "$work/faithfulness.tsv" \
            --plot-link faithfulness.png &&
            "$build/bench/tc-plot-accuracy" --in "$work/faithfulness.tsv" --out docs/faithfulness.png \
                --title "agent conv benchmarks vs PyTorch's own time per layer" \
                --xlabel "PyTorch's time for the layer (ms)" --ylabel "agent benchmark (ms)" \
                --note "one point per distinct conv and direction; solid: equal; dashed: +-10 %" &&
            cp docs/FAITHFULNESS.md "$work/faithfulness.md"
    fi
}
run_accuracy() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/accuracy.sh --quick --fresh"
        bench/accuracy.sh --quick --fresh --dir "$build/bench-accuracy-quick" --out "$work/accuracy.md" \
            --plot docs/accuracy.svg --plot-link accuracy.svg >/dev/null
    else
        cmd="bench/accuracy.sh${accuracy_args:+ $accuracy_args} (resumable)"
        # shellcheck disable=SC2086  # the options split into words
        bench/accuracy.sh $accuracy_args --out "$work/accuracy.md" --plot docs/accuracy.svg \
            --plot-link accuracy.svg >/dev/null
    fi
}

run_bundle() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/bundle_size.sh --runs 5"
        bench/bundle_size.sh --build-dir "$build" --runs 5 --out "$work/bundle.md"
    else
        cmd="bench/bundle_size.sh"
        bench/bundle_size.sh --build-dir "$build" --out "$work/bundle.md"
    fi
}

# Demote a report's headings below a section's "##" and drop its title line.
embed() {
    awk 'NR == 1 && /^# / { next } !started && /^$/ { next } { started = 1 } /^#+ / { sub(/^#/, "##") } { print }' "$1"
}

cd "$repo"
failed=()
for n in "${selected[@]}"; do
    echo "bench.sh: == $n (${script[$n]}, $mode)" >&2
    rm -f "$work/$n.md"
    t0=$(date +%s)
    when=$(date -u '+%Y-%m-%d %H:%M UTC')
    bench_monitor_start "$work/logs/$n.load"
    st=0
    "run_$n" >"$work/logs/$n.log" 2>&1 || st=$?
    load=$(bench_monitor_stop)
    secs=$(( $(date +%s) - t0 ))
    {
        echo "<!-- bench:$n -->"
        echo "## ${title[$n]}"
        echo
        echo "*$when on $(uname -n), $mode run, ${secs} s; $load. Command: \`$cmd\`.*"
        echo
        if [ "$quick" -eq 1 ]; then
            echo "Smoke run (\`--quick\`): small subsets and few repetitions. Its figures show that the"
            echo "benchmark works, not how the machine or the method performs; run without \`--quick\`."
            echo
        fi
        if [ "$st" -ne 0 ]; then
            echo "**FAILED** (exit $st). Last lines of its output:"
            echo
            echo '```'
            tail -n 15 "$work/logs/$n.log"
            echo '```'
            failed+=("$n")
        elif [ -s "$work/$n.md" ]; then
            embed "$work/$n.md"
        else
            echo "(the benchmark wrote no report)"
        fi
        echo
        echo "<!-- /bench:$n -->"
    } >"$work/sections/$n.md"
    if [ "$st" -ne 0 ]; then
        echo "bench.sh: $n FAILED (exit $st); log: $work/logs/$n.log" >&2
        tail -n 5 "$work/logs/$n.log" >&2
    else
        echo "bench.sh: $n done in $secs s" >&2
    fi
done

# Assemble: this run's sections, the previous file's for the others.
old_sections=$work/old-sections
rm -rf "$old_sections"
mkdir -p "$old_sections"
if [ -f "$out" ]; then
    awk -v dir="$old_sections" '
        /^<!-- bench:[a-z]+ -->$/ { name = $2; sub(/^bench:/, "", name); f = dir "/" name ".md" }
        f { print > f }
        /^<!-- \/bench:[a-z]+ -->$/ { close(f); f = "" }' "$out"
fi
tmp=$out.tmp
{
    echo "# Benchmarks"
    echo
    echo "Written by \`deploy/bench.sh\` (\`--list\` names the benchmarks, \`--only NAME,...\` reruns"
    echo "some, \`--quick\` makes a smoke run). Each section says when and on which machine it ran,"
    echo "how long it took and how loaded the machine was. Figures are ratios of two things"
    echo "measured in the same run, interleaved (A B A B ...), or distributions, so that they hold"
    echo "on a noisy machine; absolute times from a shared machine are not stable from run to run"
    echo "(MEASURING.md in the design notes; docs/VARIABILITY.md)."
    echo
    echo "## Machine of the latest run"
    echo
    bench_machine_md "$build"
    echo "- load average (1, 5, 15 min) at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    for n in "${all[@]}"; do
        if [ -f "$work/sections/$n.md" ] && printf '%s\n' "${selected[@]}" | grep -x "$n" >/dev/null; then
            cat "$work/sections/$n.md"
        elif [ -f "$old_sections/$n.md" ]; then
            cat "$old_sections/$n.md"
        else
            echo "<!-- bench:$n -->"
            echo "## ${title[$n]}"
            echo
            echo "Not run yet: \`deploy/bench.sh --only $n\` (${script[$n]})."
            echo
            echo "<!-- /bench:$n -->"
        fi
        echo
    done
} >"$tmp"
mv "$tmp" "$out"
echo "bench.sh: wrote $out" >&2
if [ "${#failed[@]}" -gt 0 ]; then
    echo "bench.sh: failed: ${failed[*]}" >&2
    exit 1
fi
