#!/usr/bin/env bash
# trace_variability.sh: run-to-run variability of training time on this
# machine's CPU, the floor any prediction error is compared with.
#
# For each model and batch, `agent trace` trains REPEAT times (each a fresh
# PyTorch process) and reports the spread (max - min) / median of the repeat
# medians. Results go to docs/reports/training-time-variability.md with the machine's details.
#
# Environment (defaults in brackets):
#   MODELS [resnet18,mobilenet_v2,densenet121]   BATCHES [8,32]
#   INPUT_SIZE [112]  THREADS [all CPUs; a list such as 2,1 gives one table each]
#   WARMUP [3]  ITERS [10]  REPEAT [5]
#   BUILD_DIR [build]  OUT [BUILD_DIR/bench-out/variability.tcr]  DOC [docs/reports/training-time-variability.md]
# The result file makes the run resumable: rerunning skips finished traces
# (delete OUT for fresh figures).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
models=${MODELS:-resnet18,mobilenet_v2,densenet121}
batches=${BATCHES:-8,32}
input=${INPUT_SIZE:-112}
threads=${THREADS:-$(nproc)}  # a comma-separated list runs each
warmup=${WARMUP:-3}
iters=${ITERS:-10}
repeat=${REPEAT:-5}
build=${BUILD_DIR:-build}
out=${OUT:-$build/bench-out/variability.tcr}
doc=${DOC:-docs/reports/training-time-variability.md}
agent="$build/agent/agent"
py=${TRAINCAST_PYTHON:-/usr/bin/python3}

[ -x "$agent" ] || { echo "no $agent: build first (cmake -S . -B $build && cmake --build $build)" >&2; exit 2; }
mkdir -p "$(dirname "$out")"

status=0
IFS=, read -r -a thread_list <<< "$threads"
declare -A section_note
for t in "${thread_list[@]}"; do
    t_load=$(bench_loadavg)
    t_start=$(date +%s)
    read -r busy0 total0 < <(bench_cpu_jiffies)
    set +e
    "$agent" trace --models "$models" --batches "$batches" --input-size "$input" \
        --threads "$t" --warmup "$warmup" --iters "$iters" --repeat "$repeat" \
        --no-profile --no-graph --timeout 3600 --out "$out" \
        2> >(tee "$out.log.$t" >&2) | tee "$out.table.$t"
    st=${PIPESTATUS[0]}
    set -e
    [ "$st" -eq 0 ] || status=$st
    read -r busy1 total1 < <(bench_cpu_jiffies)
    busy=$(( total1 > total0 ? 100 * (busy1 - busy0) / (total1 - total0) : 0 ))
    skipped=$(grep -o '[0-9]* of [0-9]* traces are already there' "$out.log.$t" || true)
    if ! grep -q '^trace:' "$out.log.$t"; then  # no progress: nothing was run
        section_note[$t]="Taken from the result file of an earlier run of this script (not \
measured again now; delete $out for fresh figures)."
    else
        section_note[$t]="Measured in $(( $(date +%s) - t_start )) s; load average (1, 5, \
15 min) before $t_load, after $(bench_loadavg); all CPUs together were busy \
${busy} % of that time (every process on the machine, this one included)${skipped:+; \
$skipped from an earlier run}."
    fi
done

versions=$("$py" -c 'import torch, torchvision, re; m = re.search(r"(?:MKL-DNN|oneDNN) v([0-9.]+)", torch.__config__.show()); print("PyTorch %s, torchvision %s, oneDNN %s" % (torch.__version__, torchvision.__version__, m.group(1) if m else "?"))')

{
    echo "# Run-to-run variability of training time (CPU)"
    echo
    echo "Measured by \`bench/trace_variability.sh\`; rerun it to refresh these figures."
    echo "Each trace trains the model $repeat times, each run a fresh PyTorch process"
    echo "($warmup warm-up + $iters measured iterations of forward, loss, backward, SGD step,"
    echo "zero_grad on synthetic data). The **spread** is (max − min) / median of the $repeat run"
    echo "medians: the run-to-run variability, which is the floor any prediction error on this"
    echo "machine is compared with."
    echo
    echo "## Machine"
    echo
    echo "- CPU: $(bench_cpu_model), $(nproc) logical CPUs available; training threads: $threads"
    echo "- Memory: $(bench_mem); $(uname -sr)"
    echo "- $versions"
    echo "- Input size: ${input}×${input} px (reduced from 224 to keep the run bounded on this"
    echo "  CPU), fp32, SGD (momentum 0, weight decay 0)"
    echo "- Written $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    for t in "${thread_list[@]}"; do
    echo "## Results: $t training thread$([ "$t" = 1 ] || echo s)"
    echo
    echo "${section_note[$t]}"
    echo
    echo "| model | batch | status | median iteration (ms) | spread | run medians (ms) |"
    echo "|---|---:|---|---:|---:|---|"
    awk 'NR > 1 {
        model = $1; sub(/^torchvision:/, "", model)
        if ($3 == "ok") {
            meds = ""
            for (i = 6; i <= NF; i++) meds = meds (i > 6 ? ", " : "") $i
            printf "| %s | %s | ok | %s | %s | %s |\n", model, $2, $4, $5, meds
        } else {
            reason = ""
            for (i = 6; i <= NF; i++) reason = reason (i > 6 ? " " : "") $i
            printf "| %s | %s | %s | – | – | %s |\n", model, $2, $3, reason
        }
    }' "$out.table.$t"
    echo
    done
    echo "## Reading the figures"
    echo
    echo "The spread is taken over separate processes, not over the iterations of one run:"
    echo "on a shared machine whole runs move together (other work competing for the cores,"
    echo "shared caches, memory bandwidth, clock changes), which the iterations of one run do"
    echo "not show. The spread is a range over separate runs, not the error of a truth taken as their"
    echo "median (that is smaller, and \`aggregator validate\` measures it as its noise floor)."
    echo "The load averages above say how busy the machine was;"
    echo "a dedicated machine (or a GPU) gives far smaller figures."
} > "$doc"
echo "wrote $doc" >&2
exit "$status"
