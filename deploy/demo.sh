#!/usr/bin/env bash
# demo.sh [--fresh] [--models LIST] [--held-out NAME] [--input-size PX] [--batches LIST]
#
# The whole pipeline on this machine, in under 10 minutes on 2 cores:
#   setup (packages, build) -> embedded PostgreSQL -> aggregator serve (CURVE keys)
#   -> two CPU agents as two devices (1 thread, and all threads; a GPU joins when present)
#      benchmark the convs and trace the training of eight small CNNs (two of each kind)
#      at a small input size, waiting for quiet while other processes use the machine
#   -> the load every measurement was taken under
#   -> aggregator fit -> aggregator validate
#   -> aggregator predict --gpu all for a CNN held out of fitting, with a plot,
#      and its comparison page (aggregator report --html).
# The held-out CNN is never traced; only its convolutions are benchmarked,
# one device at a time (two agents timing at once on a small machine would
# slow each other down). Agents then serve jobs: were any conv still missing,
# predict would queue it and they would measure it on demand.
#
# Everything lives in .traincast/demo; a second run reuses what is stored and
# measures nothing again. --fresh starts over. NO_COLOR=1 (or output that is
# not a terminal) prints the step titles without escape sequences.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# Eight small CNNs, two of each kind (leave-one-CNN-out of a CNN unlike
# every other one trained on measures the set, not the method).
models=squeezenet1_0,squeezenet1_1,shufflenet_v2_x0_5,shufflenet_v2_x1_0,mnasnet0_5,mobilenet_v2,resnet18,resnet34
held_out=resnet50
input_size=64
batches=4,8,16
fresh=0

while [ $# -gt 0 ]; do
    case "$1" in
    --fresh) fresh=1 ;;
    --models) models=$2; shift ;;
    --held-out) held_out=$2; shift ;;
    --input-size) input_size=$2; shift ;;
    --batches) batches=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# Bold step titles on a terminal, plain text where NO_COLOR is set
# (https://no-color.org) or the output is not a terminal.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-}" != dumb ]; then
    step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
    step() { printf '\n== %s\n' "$*"; }
fi
started=$(date +%s)

step "setup"
"$repo/deploy/setup.sh"
agent=$repo/build/agent/agent
aggregator=$repo/build/aggregator/aggregator

demo=$repo/.traincast/demo
if [ "$fresh" -eq 1 ]; then
    "$repo/deploy/pg-local.sh" stop "$demo/pg" >/dev/null 2>&1 || true
    rm -rf "$demo"
fi
mkdir -p "$demo"

step "database"
dsn=$("$repo/deploy/pg-local.sh" start "$demo/pg")
export TRAINCAST_DB=$dsn
echo "$dsn"
"$aggregator" migrate

step "keys"
[ -f "$demo/aggregator/aggregator.key" ] || "$aggregator" keygen --keys "$demo/aggregator"
threads_all=$(nproc)
agents=("cpu1:cpu:1" "cpu$threads_all:cpu:$threads_all")
if "$agent" info 2>/dev/null | grep -qE '^  cuda +NVIDIA'; then
    agents+=("gpu0:cuda:0:0")
    echo "an NVIDIA GPU is present: it joins as a third device"
fi
for a in "${agents[@]}"; do
    name=${a%%:*}
    state=$demo/agent-$name
    [ -f "$state/agent.key" ] || "$agent" keygen --state "$state" >/dev/null
    cp "$demo/aggregator/aggregator.pub" "$state/aggregator.pub"
    grep -qxF "$(cat "$state/agent.pub")" "$demo/aggregator/allowlist" 2>/dev/null \
        || cat "$state/agent.pub" >>"$demo/aggregator/allowlist"
done
echo "aggregator key and ${#agents[@]} agent keys; allowlist: $demo/aggregator/allowlist"

step "aggregator serve"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=tcp://127.0.0.1:$port
"$aggregator" serve --listen "$endpoint" --keys "$demo/aggregator" >"$demo/aggregator.log" 2>&1 &
serve_pid=$!
pids=("$serve_pid")
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
sleep 1
kill -0 "$serve_pid" 2>/dev/null || { cat "$demo/aggregator.log" >&2; exit 1; }
echo "listening on $endpoint (log: $demo/aggregator.log)"

device_args() { # NAME:KIND:THREADS_OR_INDEX
    local kind rest
    kind=$(echo "$1" | cut -d: -f2)
    rest=$(echo "$1" | cut -d: -f3-)
    if [ "$kind" = cpu ]; then
        echo "--device cpu --threads $rest"
    else
        echo "--device cuda:${rest%%:*}"
    fi
}

# One device at a time, so the two CPU devices do not disturb each other's timings.
for a in "${agents[@]}"; do
    name=${a%%:*}
    step "agent $name: benchmark convs and trace training ($models at ${input_size} px, batches $batches)"
    # shellcheck disable=SC2046
    "$agent" run --aggregator "$endpoint" --state "$demo/agent-$name" $(device_args "$a") \
        --models "$models" --batches "$batches" --input-size "$input_size" \
        --warmup 2 --iters 5 --repeats 2 --budget-ms 150 --max-reps 30
done

# The held-out CNN: conv benchmarks only, never a trace.
for a in "${agents[@]}"; do
    name=${a%%:*}
    step "agent $name: benchmark the convs of $held_out (held out: never traced)"
    # shellcheck disable=SC2046
    "$agent" run --aggregator "$endpoint" --state "$demo/agent-$name" $(device_args "$a") \
        --models "$held_out" --batches "$batches" --input-size "$input_size" --no-trace \
        --budget-ms 150 --max-reps 30
done

step "agents serve jobs"
for a in "${agents[@]}"; do
    name=${a%%:*}
    # shellcheck disable=SC2046
    "$agent" serve --aggregator "$endpoint" --state "$demo/agent-$name" $(device_args "$a") \
        --budget-ms 150 --max-reps 30 >"$demo/agent-$name.log" 2>&1 &
    pids+=("$!")
done
sleep 2

step "measurement conditions"
# What other processes used of the machine while each benchmark and trace
# ran (the agents wait for quiet, measure again what was taken under load,
# and mark what stays disturbed; the fit leaves disturbed traces out).
psql -X -q "$dsn" -c "SELECT kind, measured, disturbed, remeasured AS measured_again,
       round(median_others_pct::numeric, 1) AS others_median_pct,
       round(max_others_pct::numeric, 1) AS others_max_pct, device
FROM measurement_load ORDER BY device, kind" || true
busy=$(psql -X -q -tA "$dsn" -c "SELECT coalesce(sum(disturbed), 0) FROM measurement_load" 2>/dev/null || echo 0)
if [ "${busy:-0}" -gt 0 ]; then
    echo "$busy measurements were taken while other processes used the machine (disturbed):"
    echo "their traces are left out of the fit, their benchmarks used only where no quiet one exists."
else
    echo "every measurement was taken on a quiet machine"
fi

step "aggregator fit"
if ! "$aggregator" fit; then
    echo "demo: the fit failed (above); if the machine was busy throughout, rerun the demo when it is" \
         "quiet (or fit with: $aggregator fit --include-disturbed)" >&2
    exit 1
fi

step "aggregator validate (leave-one-CNN-out)"
"$aggregator" validate

step "aggregator predict --gpu all: $held_out (held out of fitting)"
# Exit 3: some rows could not be predicted; each says why.
"$aggregator" predict --gpu all --model "torchvision:$held_out" --input-size "$input_size" \
    --batch "$batches" --plot "$demo/predict-$held_out.svg" || [ $? -eq 3 ]

step "aggregator report --html: the comparison page of $held_out"
"$aggregator" report --html "$demo/report-$held_out.html" --model "torchvision:$held_out" \
    --input-size "$input_size" --batch "$batches"

step "done in $(( $(date +%s) - started )) s"
echo "plot: $demo/predict-$held_out.svg"
echo "page: $demo/report-$held_out.html (open it in a browser)"
echo "database: psql \"$dsn\" (see README, Analysis in SQL); stop it with deploy/pg-local.sh stop $demo/pg"
