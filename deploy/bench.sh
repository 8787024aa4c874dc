#!/usr/bin/env bash
# bench.sh [--only NAME,...] [--quick] [--list] [--out FILE] [--build-dir DIR]
#          [--accuracy-args "OPTIONS"]
#
# Runs the benchmarks under bench/ and writes one report per benchmark into
# docs/reports/ (--list names each report's file), then the index of the
# reports, docs/reports/README.md: the machine (CPU, cores, memory, kernel,
# library versions) and, for every report, what it measures and when it last
# ran, how long it took and how loaded the machine was. Benchmarks compare two
# things measured in the same run (A B A B ...) or report distributions, so
# their figures hold on a noisy machine.
#
#   --only NAME,...   run these benchmarks only (--list names them); the
#                     reports of the others and their lines in the index are
#                     kept from the previous run
#   --quick           a smoke run: small subsets, few repetitions (10 to 15
#                     minutes on 2 cores); its reports and index go to the work
#                     directory (BUILD/bench-out/quick/reports/), so a smoke run
#                     never replaces a full one in docs/reports/
#   --out FILE        the index [docs/reports/README.md; with --quick, the work
#                     directory's reports/README.md]; the reports are written
#                     beside it
#   --build-dir DIR   [build]; built first when the binaries are missing
#   --accuracy-args "OPTIONS"
#                     more options for bench/accuracy.sh in a full run, e.g.
#                     "--time-budget 90" or "--models resnet18,alexnet,..."
#
# A full run takes hours on a 2-core machine (the accuracy study most of it;
# it is resumable: rerun to continue). Exit status 1 when a benchmark failed
# (its line in the index says so and its previous report is kept); the others
# still run.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=
build=$repo/build
only=
quick=0
accuracy_args=

all=(predict sql memory collection transport load conv import export variability allocators faithfulness matmul canary accuracy bundle)
declare -A title=(
    [predict]="Predict latency on a large database"
    [sql]="SQL latency: the README's queries, every view and status on a large database"
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
    [matmul]="Matmul faithfulness: CPU matmul benchmarks against PyTorch's own calls"
    [canary]="The canary: benchmarks in slow phases of the host, off and on"
    [accuracy]="Accuracy study (CPU devices)"
    [bundle]="The relocatable agent bundle: size and start-up"
)
declare -A report=(
    [predict]=predict-latency.md [sql]=sql-latency.md [memory]=memory-use.md [collection]=collection-cost.md
    [transport]=ingest-throughput.md [load]=aggregator-load.md
    [conv]=conv-benchmark-throughput.md [import]=model-import-time.md
    [export]=model-export-time.md [variability]=training-time-variability.md
    [allocators]=allocators.md [faithfulness]=faithfulness.md
    [matmul]=matmul-faithfulness.md [canary]=canary.md [accuracy]=accuracy.md
    [bundle]=agent-bundle.md
)
declare -A what=(
    [predict]="how long \`aggregator predict\` takes on a database of more than a million conv results"
    [sql]="how long the README's analysis queries, each view read whole and \`aggregator status\` take on that database, and how each grows with the data"
    [memory]="peak resident memory of the aggregator while it ingests and of the agent while it benchmarks"
    [collection]="what deduplication saves when benchmarking the convs of a set of CNNs, and the configs an agent covers per second"
    [transport]="conv results stored per second end to end (agent, ZeroMQ, aggregator, PostgreSQL) against a raw COPY"
    [load]="20 agents pushing at once through one aggregator: rates, latencies, nothing lost or stored twice"
    [conv]="conv benchmark throughput over the whole CNN set, and its deduplication counts"
    [import]="time to import each model's ONNX graph (\`agent model describe\`)"
    [export]="time to export each torchvision model to weight-free ONNX"
    [variability]="run-to-run spread of CPU training time: the floor of any prediction error on the machine"
    [allocators]="speed and steadiness of a CPU device under each memory allocator"
    [faithfulness]="the agent's conv benchmarks against PyTorch's own time, per conv and per CNN"
    [matmul]="the agent's CPU matmul benchmarks against PyTorch's own calls, per matmul config and direction of vit_b_16, swin_t and convnext_tiny"
    [canary]="the share of benchmarks taken more than 1.3 times slower than their fastest, with the host-phase canary off and on, and what it costs"
    [accuracy]="prediction error on CNNs the fit never saw, per CPU device and input size"
    [bundle]="size and start-up cost of the relocatable agent bundle"
)
declare -A script=(
    [predict]=bench/predict_latency.sh [sql]=bench/sql_latency.sh [memory]=bench/memory.sh
    [collection]=bench/collection_cost.sh [transport]=bench/transport.sh [load]=bench/load.sh
    [conv]=bench/conv_bench.sh [import]=bench/model_import.sh [export]=bench/model_export.sh
    [variability]=bench/trace_variability.sh [allocators]=bench/allocators.py
    [faithfulness]=bench/faithfulness.py [matmul]=bench/matmul_faithfulness.py
    [canary]=bench/canary.py
    [accuracy]=bench/accuracy.sh
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
        for n in "${all[@]}"; do printf '%-12s %-28s %-36s %s\n' "$n" "${script[$n]}" "${report[$n]}" "${title[$n]}"; done
        exit 0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$out" in /*|'') ;; *) out=$PWD/$out ;; esac
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
if [ -z "$out" ]; then
    out=$([ "$quick" -eq 1 ] && echo "$work/reports/README.md" || echo "$repo/docs/reports/README.md")
fi
dir=$(dirname "$out")
mkdir -p "$work/entries" "$work/logs" "$dir"

# run_NAME: runs the benchmark, leaves its Markdown in $work/NAME.md (charts
# straight into $dir) and the command line in $cmd. A report that opens with
# its own "# " title is copied to $dir as it is; the others get the title and
# a line saying when and how they ran.
cmd=
run_predict() {
    cmd="bench/predict_latency.sh"
    bench/predict_latency.sh --out "$work/predict.md"
}
run_sql() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/sql_latency.sh --runs 2"
        bench/sql_latency.sh --runs 2 --out "$work/sql.md" >/dev/null
    else
        cmd="bench/sql_latency.sh"
        bench/sql_latency.sh --out "$work/sql.md" >/dev/null
    fi
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
        cmd="bench/transport.sh"
        bench/transport.sh --out "$work/transport.md" >/dev/null
    fi
}
run_load() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/load.sh --quick"
        bench/load.sh --quick --out "$work/load.md" >/dev/null
    else
        cmd="bench/load.sh"
        bench/load.sh --out "$work/load.md" >/dev/null
    fi
}
run_conv() {
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS='squeezenet1_1 shufflenet_v2_x0_5' BUDGET_MS=50 bench/conv_bench.sh"
        MODELS="squeezenet1_1 shufflenet_v2_x0_5" BUDGET_MS=50 WORK=$work/conv OUT=$work/conv.md bench/conv_bench.sh >/dev/null
    else
        cmd="bench/conv_bench.sh"
        WORK=$work/conv OUT=$work/conv.md bench/conv_bench.sh >/dev/null
    fi
}
run_import() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/model_import.sh BUILD_DIR 1"
        bench/model_import.sh "$build" 1 >"$work/import.md"
    else
        cmd="bench/model_import.sh BUILD_DIR 5"
        bench/model_import.sh "$build" 5 >"$work/import.md"
    fi
}
run_export() {
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS=squeezenet1_1,resnet18,mobilenet_v2 bench/model_export.sh"
        MODELS=squeezenet1_1,resnet18,mobilenet_v2 bench/model_export.sh >"$work/export.md"
    else
        cmd="bench/model_export.sh"
        bench/model_export.sh >"$work/export.md"
    fi
}
run_variability() {
    rm -f "$work/variability.tcr"*
    if [ "$quick" -eq 1 ]; then
        cmd="MODELS=squeezenet1_1 BATCHES=2,8 INPUT_SIZE=64 REPEAT=3 WARMUP=1 ITERS=3 THREADS=1 bench/trace_variability.sh"
        MODELS=squeezenet1_1 BATCHES=2,8 INPUT_SIZE=64 REPEAT=3 WARMUP=1 ITERS=3 THREADS=1 \
            OUT=$work/variability.tcr DOC=$work/variability.md bench/trace_variability.sh >/dev/null
    else
        cmd="THREADS=$(nproc),1 bench/trace_variability.sh"
        THREADS=$(nproc),1 OUT=$work/variability.tcr DOC=$work/variability.md bench/trace_variability.sh >/dev/null
    fi
}
run_allocators() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/allocators.py --rounds 1 --iters 3 --model squeezenet1_1"
        "$bench_python" bench/allocators.py --rounds 1 --iters 3 --model squeezenet1_1 \
            --build-dir "$build" --out "$work/allocators.md"
    else
        cmd="bench/allocators.py"
        "$bench_python" bench/allocators.py --build-dir "$build" --out "$work/allocators.md"
    fi
}
run_faithfulness() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/faithfulness.py --models resnet18,shufflenet_v2_x1_0 --rounds 1 --budget-ms 40"
        "$bench_python" bench/faithfulness.py --models resnet18,shufflenet_v2_x1_0 --rounds 1 \
            --budget-ms 40 --max-reps 10 --build-dir "$build" --work "$work/faithfulness" \
            --out "$work/faithfulness.md"
    else
        cmd="bench/faithfulness.py"
        "$bench_python" bench/faithfulness.py --build-dir "$build" --work "$work/faithfulness" \
            --out "$work/faithfulness.md" --points "$work/faithfulness.tsv" \
            --plot-link faithfulness.png &&
            "$build/bench/tc-plot-accuracy" --in "$work/faithfulness.tsv" --out "$dir/faithfulness.png" \
                --title "agent conv benchmarks vs PyTorch's own time per layer" \
                --xlabel "PyTorch's time for the layer (ms)" --ylabel "agent benchmark (ms)" \
                --note "one point per distinct conv and direction; solid: equal; dashed: +-10 %"
    fi
}
run_matmul() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/matmul_faithfulness.py --models vit_b_16 --rounds 1 --budget-ms 40 --max-reps 10"
        "$bench_python" bench/matmul_faithfulness.py --models vit_b_16 --rounds 1 --budget-ms 40 \
            --max-reps 10 --build-dir "$build" --work "$work/matmul" --out "$work/matmul.md"
    else
        cmd="bench/matmul_faithfulness.py"
        "$bench_python" bench/matmul_faithfulness.py --build-dir "$build" --work "$work/matmul" \
            --out "$work/matmul.md"
    fi
}
run_canary() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/canary.py --models alexnet --rounds 2"
        "$bench_python" bench/canary.py --models alexnet --rounds 2 --build-dir "$build" \
            --work "$work/canary" --out "$work/canary.md"
    else
        cmd="bench/canary.py"
        "$bench_python" bench/canary.py --build-dir "$build" --work "$work/canary" \
            --out "$work/canary.md"
    fi
}
run_accuracy() {
    if [ "$quick" -eq 1 ]; then
        cmd="bench/accuracy.sh --quick --fresh"
        bench/accuracy.sh --quick --fresh --dir "$build/bench-accuracy-quick" --out "$work/accuracy.md" \
            --plot "$dir/accuracy.svg" --plot-link accuracy.svg >/dev/null
    else
        cmd="bench/accuracy.sh${accuracy_args:+ $accuracy_args} (resumable)"
        # shellcheck disable=SC2086  # the options split into words
        bench/accuracy.sh $accuracy_args --out "$work/accuracy.md" --plot "$dir/accuracy.svg" \
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
    ran="$when on $(uname -n), $mode run, ${secs} s; $load. Command: \`$cmd\`."
    if [ "$quick" -eq 1 ]; then
        ran+=" Smoke run (\`--quick\`): small subsets and few repetitions; its figures show that the"
        ran+=" benchmark works, not how the machine or the method performs."
    fi
    if [ "$st" -eq 0 ] && [ -s "$work/$n.md" ]; then
        {
            if ! head -n 1 "$work/$n.md" | grep -q '^# '; then
                echo "# ${title[$n]}"
                echo
                echo "*$ran*"
                echo
            fi
            cat "$work/$n.md"
        } >"$dir/${report[$n]}"
    fi
    {
        echo "<!-- bench:$n -->"
        echo "- [${title[$n]}](${report[$n]}): ${what[$n]}."
        if [ "$st" -ne 0 ]; then
            echo "  **FAILED** (exit $st) $ran The report is from an earlier run, if any. Last lines of its output:"
            echo
            echo '  ```'
            tail -n 15 "$work/logs/$n.log" | sed 's/^/  /'
            echo '  ```'
            failed+=("$n")
        elif [ -s "$work/$n.md" ]; then
            echo "  $ran"
        else
            echo "  $ran The benchmark wrote no report."
        fi
        echo "<!-- /bench:$n -->"
    } >"$work/entries/$n.md"
    if [ "$st" -ne 0 ]; then
        echo "bench.sh: $n FAILED (exit $st); log: $work/logs/$n.log" >&2
        tail -n 5 "$work/logs/$n.log" >&2
    else
        echo "bench.sh: $n done in $secs s" >&2
    fi
done

# The index: this run's entries, the previous index's for the others.
old_entries=$work/old-entries
rm -rf "$old_entries"
mkdir -p "$old_entries"
if [ -f "$out" ]; then
    awk -v dir="$old_entries" '
        /^<!-- bench:[a-z]+ -->$/ { name = $2; sub(/^bench:/, "", name); f = dir "/" name ".md" }
        f { print > f }
        /^<!-- \/bench:[a-z]+ -->$/ { close(f); f = "" }' "$out"
fi
tmp=$out.tmp
{
    echo "# Measured reports"
    echo
    echo "Written by \`deploy/bench.sh\` (\`--list\` names the benchmarks and their reports,"
    echo "\`--only NAME,...\` reruns some, \`--quick\` makes a smoke run into the build directory)."
    echo "One report per benchmark, each in its own file; below, what each measures and when it"
    echo "last ran, how long it took and how loaded the machine was. Figures are ratios of two"
    echo "things measured in the same run, interleaved (A B A B ...), or distributions, so that"
    echo "they hold on a noisy machine; absolute times from a shared machine are not stable from"
    echo "run to run ([training-time-variability.md](training-time-variability.md))."
    echo
    echo "## Machine of the latest run"
    echo
    bench_machine_md "$build"
    echo "- load average (1, 5, 15 min) at the end: $(bench_loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "## Reports"
    echo
    for n in "${all[@]}"; do
        if [ -f "$work/entries/$n.md" ] && printf '%s\n' "${selected[@]}" | grep -x "$n" >/dev/null; then
            cat "$work/entries/$n.md"
        elif [ -f "$old_entries/$n.md" ]; then
            cat "$old_entries/$n.md"
        else
            echo "<!-- bench:$n -->"
            echo "- ${title[$n]} (${report[$n]}): ${what[$n]}."
            echo "  Not run yet: \`deploy/bench.sh --only $n\` (${script[$n]})."
            echo "<!-- /bench:$n -->"
        fi
        echo
    done
} >"$tmp"
mv "$tmp" "$out"
echo "bench.sh: wrote $out and the reports beside it" >&2
if [ "${#failed[@]}" -gt 0 ]; then
    echo "bench.sh: failed: ${failed[*]}" >&2
    exit 1
fi
