#!/usr/bin/env bash
# bench/accuracy.sh [options]
#
# The accuracy study on this machine's CPU: how well traincast predicts the
# training iteration time of CNNs it never fitted on, next to how much that
# time varies from run to run.
#
# Two devices: the cpu agent with 1 thread and with all threads (two device
# classes, as on a fleet). ROUNDS rounds, round-robin over the whole set: a
# round takes every CNN of the list once, and for each CNN, on each device
# and at each input size, `agent bench` measures its convs at the batch
# sizes, then `agent trace` trains it once (a fresh process per batch size)
# through PyTorch. So a CNN's conv benchmarks and its traces are taken close
# together in time, both sides are repeated the same number of times, and a
# point's rounds are spread over the hours the study takes: the fit uses the
# geometric mean of the rounds on both sides, the spread across rounds and the noise
# floor (`aggregator validate`: two halves of each point's rounds) include
# the machine's drift over the study (convs shared with a CNN measured
# earlier in the same round are not measured again). Then everything goes through the real pipeline: an embedded
# PostgreSQL (deploy/pg-local.sh, in the study's directory), `aggregator
# serve` with CURVE keys, `agent push`, `aggregator fit` and `aggregator
# validate --format json` with every hold-out (one CNN, one family, one batch
# size) and statistic (geomean, median, p10, min), and, where the models' matmuls are
# benchmarked, with them regressed instead (--regress-matmuls). The report (bench/accuracy_report.py)
# gives per device and input size the nested leave-one-CNN-out and
# leave-one-family-out errors, per-family errors, unseen batch sizes, the
# spread, interval coverage and width, the baseline (the published method's
# form), a predicted-vs-measured chart, and, while the floor is above its
# goal, the rounds it needs (bench/trace_noise.py; its figures in
# logs/trace-noise.txt).
#
# --outside LIST adds CNNs that stay out of the study: measured the same way,
# in the same rounds (their own result files and agent states), but only
# their conv benchmarks go into the study's database. The fit on the study's
# CNNs then predicts each of them from its structure (torchvision's ONNX
# export) and those benchmarks alone, `aggregator predict --model
# torchvision:NAME`, and the report compares that with their measured traces
# (stored in a second database, `outside`, in the same PostgreSQL): the
# check on CNNs the study never saw.
#
# Resumable: everything lives in --dir (its .gitignore keeps what a later
# session on the same host needs to go on: commit it; docs/fitting.md); a second run skips the rounds of
# each CNN already measured (and the CNNs that failed, unless
# --retry-failed), resends what is stored (stored once) and fits again; a
# run with other settings (host, CNNs, outside CNNs, batches, sizes, devices,
# rounds, measuring settings) than the stored ones is refused, except more
# --rounds (the study goes on to them). --fresh starts over. --analyze-only
# runs the pipeline and the report on what is measured.
#
# Options (defaults in brackets):
#   --models LIST        CNNs [the CNN set: every model of tests/data/cnn_set.convs]
#   --outside LIST       CNNs predicted by the study's fit, never fitted on [none];
#                        in both lists a torchvision NAME or FILE.py:FUNC, a model
#                        a Python file builds (bench/models/new_families.py)
#   --batches LIST       batch sizes [2,4,8,16,32]
#   --input-sizes LIST   image sizes [112] (--input-size PX: one size)
#   --threads LIST       one cpu device per thread count [1,<all logical CPUs>]
#   --devices LIST       the devices instead: cpu:THREADS or cuda:INDEX entries, e.g.
#                        cuda:0 on a GPU machine (the study runs there unchanged)
#   --rounds R           rounds of benchmarks and traces, round-robin over the set [3]
#   --remeasure K        extra rounds at most for a CNN whose rounds disagree, after the
#                        last regular round R (the K-th labelled RxK) [2; 0: none]
#   --time-budget MIN    start no new CNN after this many minutes of this run [0: no limit]
#   --warmup W --iters N trace settings [3, 10]
#   --bench-budget-ms MS --max-reps N conv benchmark settings per item [100, 30]
#   --operands MODE      cold or warm: the CPU conv and matmul benchmarks' operands, as
#                        TRAINCAST_OPERANDS (docs/conv-benchmarks.md, "Cold
#                        operands"); each is its own device, with its own
#                        traces [cold; a resumed study keeps its own: warm
#                        when its settings do not name them]
#   --trace-timeout SEC  per trace run [900]
#   --dir DIR            state, results, database [BUILD_DIR/bench-accuracy]
#   --out FILE           Markdown report [BUILD_DIR/bench-out/accuracy.md]
#   --plot FILE          chart, .svg or .png [DIR/accuracy.svg]
#   --plot-link PATH     how the report links the chart [its path relative to --out]
#   --quick              a smoke run: 5 small CNNs, batches 2,8, 2 rounds of 3 iterations
#   --analyze-only       measure nothing: push, fit, validate and report what is there
#   --report-only        write the report again from the last analysis in DIR (its
#                        validate-*.json and tables): nothing pushed, fitted or validated
#   --retry-failed       measure again the CNNs that failed in an earlier run
#   --analyses LIST      run only these analyses besides main (see below: family, batch,
#                        median, p10, min, memory, baseline, disturbed, regress-matmuls,
#                        apart-cnns, apart-modern, cnns-before) [all]
#   --fresh              start over: delete DIR (its database included) first
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"

models=
outside=
batches=2,4,8,16,32
input_sizes=112
threads_list=1,$(nproc)
devices_list=
rounds=3
remeasure_max=2
time_budget=0
warmup=3
iters=10
analyze_only=0
report_only=0
bench_budget=100
max_reps=30
operands=
trace_timeout=900
dir=$build/bench-accuracy
out=
plot=
plot_link=
retry_failed=0
fresh=0
only_analyses=

while [ $# -gt 0 ]; do
    case "$1" in
    --models) models=$2; shift ;;
    --outside) outside=$2; shift ;;
    --batches) batches=$2; shift ;;
    --input-size|--input-sizes) input_sizes=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --remeasure) remeasure_max=$2; shift ;;
    --analyze-only) analyze_only=1 ;;
    --report-only) analyze_only=1; report_only=1 ;;
    --threads) threads_list=$2; shift ;;
    --devices) devices_list=$2; shift ;;
    --time-budget) time_budget=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --iters) iters=$2; shift ;;
    --bench-budget-ms) bench_budget=$2; shift ;;
    --max-reps) max_reps=$2; shift ;;
    --operands) operands=$2; shift ;;
    --trace-timeout) trace_timeout=$2; shift ;;
    --dir) dir=$2; shift ;;
    --out) out=$2; shift ;;
    --plot) plot=$2; shift ;;
    --plot-link) plot_link=$2; shift ;;
    --quick)
        models=squeezenet1_1,shufflenet_v2_x0_5,mnasnet0_5,mobilenet_v3_small,regnet_x_400mf
        batches=2,8; input_sizes=64; warmup=2; iters=3; rounds=2; bench_budget=50; max_reps=10 ;;
    --retry-failed) retry_failed=1 ;;
    --analyses) only_analyses=$2; shift ;;
    --fresh) fresh=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "accuracy: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

known_analyses=main,family,batch,median,p10,min,memory,baseline,disturbed,regress-matmuls,apart-cnns,apart-modern,cnns-before
IFS=, read -r -a wanted <<<"$only_analyses"
for w in "${wanted[@]}"; do
    [[ ",$known_analyses," == *",$w,"* ]] \
        || { echo "accuracy: --analyses: no analysis '$w' (${known_analyses//,/, })" >&2; exit 2; }
done

agent=$build/agent/agent
aggregator=$build/aggregator/aggregator
plotter=$build/bench/tc-plot-accuracy
for b in "$agent" "$aggregator" "$plotter"; do
    [ -x "$b" ] || { echo "accuracy: $b is missing; build first (cmake -S . -B build && cmake --build build)" >&2; exit 2; }
done
[ -n "$models" ] || models=$(sed -n 's/^model torchvision://p' "$repo/tests/data/cnn_set.convs" | paste -sd,)
IFS=, read -r -a model_list <<<"$models"
outside_list=()
[ -z "$outside" ] || IFS=, read -r -a outside_list <<<"$outside"
models_given=$(IFS=,; echo "${model_list[*]}")
# A model is a torchvision NAME or FILE.py:FUNC, one a Python file builds
# (bench/models/new_families.py; docs/model-graphs.md). The study names each
# as traincast does (NAME; STEM.FUNC for python:STEM.FUNC): its bookkeeping,
# logs and report use the name, the agent and the aggregator get the spec.
declare -A spec_of=()
name_models() { # ARRAY: its specs replaced by their names
    local -n list=$1
    local i m f
    for i in "${!list[@]}"; do
        m=${list[$i]}
        if [[ $m == *.py:* ]]; then
            [ -f "${m%:*}" ] || { echo "accuracy: $m: no such file ${m%:*}" >&2; exit 2; }
            f=${m%:*}
            f=${f##*/}
            list[$i]=${f%.py}.${m##*:}
        else
            m=torchvision:$m
        fi
        spec_of[${list[$i]}]=$m
    done
}
name_models model_list
name_models outside_list
declare -A is_outside=()
for m in "${outside_list[@]}"; do
    for s in "${model_list[@]}"; do
        [ "$m" != "$s" ] || { echo "accuracy: --outside: $m is one of the study's CNNs (--models); a CNN is either fitted on or predicted, not both" >&2; exit 2; }
    done
    is_outside[$m]=1
done
"$bench_python" -c 'import torch, torchvision' 2>/dev/null \
    || { echo "accuracy: $bench_python cannot import torch and torchvision; the traces need PyTorch (set TRAINCAST_PYTHON)" >&2; exit 2; }
# Devices as keys (t1, t2: a cpu with that many threads; g0: cuda:0) and the
# agent flags that select each.
if [ -z "$devices_list" ]; then
    devices_list=$(echo "$threads_list" | sed -E 's/(^|,)/\1cpu:/g')
fi
IFS=, read -r -a device_specs <<<"$devices_list"
device_keys=()
declare -A device_flags=()
for spec in "${device_specs[@]}"; do
    case "$spec" in
    cpu:*)
        t=${spec#cpu:}
        [[ $t =~ ^[1-9][0-9]*$ ]] && [ "$t" -le "$(nproc)" ] \
            || { echo "accuracy: '$spec': the thread count must be from 1 to $(nproc)" >&2; exit 2; }
        key=t$t; device_flags[$key]="--device cpu --threads $t" ;;
    cuda:*)
        g=${spec#cuda:}
        [[ $g =~ ^[0-9]+$ ]] || { echo "accuracy: '$spec': expected cuda:INDEX" >&2; exit 2; }
        key=g$g; device_flags[$key]="--device cuda:$g" ;;
    *) echo "accuracy: --devices: '$spec' is not cpu:THREADS or cuda:INDEX" >&2; exit 2 ;;
    esac
    device_keys+=("$key")
done
[ "${#device_keys[@]}" -ge 2 ] || echo "accuracy: warning: one device only; the study compares devices when there are two" >&2
IFS=, read -r -a size_list <<<"$input_sizes"
case "$operands" in
warm|cold)
    [ "$operands" = warm ] || [[ ",$devices_list" != *,cuda:* ]] \
        || { echo "accuracy: --operands cold is for CPU devices (a GPU always rotates its inputs); drop the cuda devices or the option" >&2; exit 2; } ;;
'')
    # Not given: a study goes on with the operands it was measured with (the
    # studies from before the setting existed were warm and do not name it);
    # a new one takes the agent's default, cold, where it has a CPU device.
    if [ "$fresh" -eq 0 ] && [ -f "$dir/settings" ]; then
        operands=$(tr ' ' '\n' <"$dir/settings" | sed -n 's/^operands=//p')
        operands=${operands:-warm}
    elif [[ ",$devices_list" == *,cpu:* ]]; then
        operands=cold
    else
        operands=warm
    fi ;;
*) echo "accuracy: --operands: '$operands' is not warm or cold" >&2; exit 2 ;;
esac
# Every agent call of the study (bench, trace, push) runs with these operands,
# whatever the caller's environment says: they are part of the CPU device.
export TRAINCAST_OPERANDS=$operands
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "accuracy: --rounds: '$rounds' is not a count from 1" >&2; exit 2; }
[[ $remeasure_max =~ ^[0-9]+$ ]] || { echo "accuracy: --remeasure: '$remeasure_max' is not a count" >&2; exit 2; }
for px in "${size_list[@]}"; do
    [[ $px =~ ^[1-9][0-9]*$ ]] || { echo "accuracy: --input-sizes: '$px' is not a size in pixels" >&2; exit 2; }
done

log() { echo "accuracy: $*" >&2; }
if [ "$fresh" -eq 1 ]; then
    "$repo/deploy/pg-local.sh" stop "$dir/pg" >/dev/null 2>&1 || true
    rm -rf "$dir"
fi
mkdir -p "$dir/logs"
out=${out:-$build/bench-out/accuracy.md}
plot=${plot:-$dir/accuracy.svg}
mkdir -p "$(dirname "$out")" "$(dirname "$plot")"

# The settings a resumed run must share with the first one.
# The machine too (its host name is part of every CPU device's identity: rounds
# from another host would be other devices, not more rounds of these), and its
# kind (bench_machine_kind: virtual machines may share a host name).
settings="host=$(uname -n) machine=$(bench_machine_kind) order=round-robin models=$models_given outside=$outside batches=$batches input=$input_sizes devices=$devices_list warmup=$warmup iters=$iters rounds=$rounds remeasure=$remeasure_max bench_budget=$bench_budget max_reps=$max_reps"
# Cold operands only where asked: the studies measured before the setting
# existed were warm, and their stored settings do not name it.
[ "$operands" = warm ] || settings+=" operands=$operands"
stored_settings=$(cat "$dir/settings" 2>/dev/null || true)
# Analysing measures nothing, so it may run anywhere: the stored host stands.
if [ "$analyze_only" -eq 1 ] && [[ $stored_settings == host=* ]]; then
    stored_machine=$(tr ' ' '\n' <<<"$stored_settings" | grep '^machine=' || true)
    settings="${settings#host=* machine=* }"
    settings="$(sed -n 's/^\(host=[^ ]*\) .*/\1/p' <<<"$stored_settings")${stored_machine:+ $stored_machine} $settings"
fi
if [ -f "$dir/settings" ] && [ "$stored_settings" != "$settings" ]; then
    if [ "$analyze_only" -eq 0 ] && bench_settings_extends "$stored_settings" "$settings"; then
        # More rounds for the same study (a lower noise floor): what is
        # measured stands, extra rounds included (they stay extra rounds:
        # RxK, bench/lib.sh), and `done` holds the CNNs with every regular
        # round of the new count. A study whose extra rounds were numbered
        # R+1... (before RxK) counts such a round up to the new count as
        # that CNN's regular round of that number.
        log "$dir: the study goes from $(tr ' ' '\n' <<<"$stored_settings" | sed -n 's/^rounds=//p') to $rounds rounds; the rounds measured stand"
        touch "$dir/rounds_done"
        bench_rounds_complete "$rounds" "$dir/rounds_done" >"$dir/done"
    else
        log "$dir holds a study with other settings; its rounds and these would not be one study:"
        # Each setting that differs, by name (a setting absent from one side: "(none)").
        for key in $(tr ' ' '\n' <<<"$stored_settings" | cut -d= -f1; tr ' ' '\n' <<<"$settings" | cut -d= -f1); do
            echo "$key"
        done | awk '!seen[$0]++' | while read -r key; do
            was=$(tr ' ' '\n' <<<"$stored_settings" | sed -n "s/^$key=//p")
            now=$(tr ' ' '\n' <<<"$settings" | sed -n "s/^$key=//p")
            [ "$was" = "$now" ] || log "  $key: stored ${was:-(none)}, now ${now:-(none)}"
        done
        log "rerun with the stored settings to resume (--rounds may grow), or add --fresh to start over"
        exit 2
    fi
fi
echo "$settings" >"$dir/settings"
touch "$dir/done" "$dir/failed" "$dir/timeline.tsv"
# What git keeps of a study directory (docs/fitting.md, "A study over several
# sessions"): the raw rounds (result files) and the bookkeeping that resumes
# them; not the database, the agents' keys, the logs or what is derived.
[ -f "$dir/.gitignore" ] || printf '%s\n' '# written by bench/accuracy.sh: commit the rounds, not what is derived' \
    '/pg/' '/aggregator/' '/agent-*/' '/outside-agent-*/' '/logs/' '/validate-*.json' \
    '/*.svg' '/*.png' '/*.tsv' '!/timeline.tsv' '/*.csv' '/*.md' >"$dir/.gitignore"

server_pid=
cleanup() {
    bench_monitor_stop >/dev/null 2>&1 || true
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    "$repo/deploy/pg-local.sh" stop "$dir/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT

started=$(date +%s)
bench_monitor_start "$dir/logs/load-$started.txt"

# ---- measuring, CNN by CNN ---------------------------------------------------
# Each device is an agent with a state directory of its own: its results carry
# that agent's id, which its key alone may send (docs/transport.md).
# One result file per kind, device and round (its label: N, or RxK for an
# extra round): a round's conv benchmarks are deduplicated across the CNNs of
# that round, and every round measures again.
# A CNN outside the study keeps its results apart: outside-KIND-... files
# and outside-agent-DEVICE states.
device_file() { echo "$dir/$1-$2-r$3.tcr"; }  # KIND DEVICE_KEY ROUND
outside_file() { echo "$dir/outside-$1-$2-r$3.tcr"; }
all_models=("${model_list[@]}" "${outside_list[@]}")
n_models=${#all_models[@]}
# Round-robin: a round is the whole set once (each CNN's conv benchmarks and
# traces together), and the rounds follow each other, so that every point's
# rounds are spread over the hours the study takes and a slow drift of the
# machine shows in the spread instead of in the misses. $dir/rounds_done
# lists "CNN ROUND" as each is measured (a resumed run goes on from there);
# $dir/done lists the CNNs whose every regular round is measured.
touch "$dir/rounds_done"

# measure CNN ROUND INDEX: one CNN's round on every device and size; sets
# `failed` to why it failed ("" when it did not).
measure() {
    local m=$1 r=$2 i=$3 file=device_file prefix= t px tag t0 t1 t2 st ok label
    failed=
    label="round $r/$rounds"
    [[ $r =~ ^[0-9]+$ ]] && [ "$r" -le "$rounds" ] || label="extra round $r"
    if [ -n "${is_outside[$m]:-}" ]; then file=outside_file; prefix=outside-; fi
    for t in "${device_keys[@]}"; do
        for px in "${size_list[@]}"; do
            tag="$m-$t-${px}px-r$r"
            log "[$i/$n_models] $m, $label, ${device_flags[$t]#--device }, $px px: conv benchmarks"
            t0=$(date +%s)
            if ! TRAINCAST_PROGRESS=plain "$agent" bench --models "${spec_of[$m]}" --input-size "$px" \
                --batches "$batches" ${device_flags[$t]} --budget-ms "$bench_budget" --max-reps "$max_reps" \
                --state "$dir/${prefix}agent-$t" --out "$($file bench "$t" "$r")" >"$dir/logs/bench-$tag.out" 2>"$dir/logs/bench-$tag.err"; then
                failed="$(grep -m1 'error' "$dir/logs/bench-$tag.err" || echo "agent bench: $(tail -n 1 "$dir/logs/bench-$tag.err")")"
                return
            fi
            t1=$(date +%s)
            log "[$i/$n_models] $m, $label, ${device_flags[$t]#--device }, $px px: training traces"
            st=0
            TRAINCAST_PROGRESS=plain "$agent" trace --models "${spec_of[$m]}" --batches "$batches" --input-size "$px" \
                ${device_flags[$t]} --warmup "$warmup" --iters "$iters" --repeat 1 \
                --timeout "$trace_timeout" --state "$dir/${prefix}agent-$t" --out "$($file trace "$t" "$r")" \
                >"$dir/logs/trace-$tag.out" 2>"$dir/logs/trace-$tag.err" || st=$?
            t2=$(date +%s)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$t" "$t0" "$t1" "$t2" "$r" "$px" >>"$dir/timeline.tsv"
            if [ "$st" -ne 0 ]; then
                ok=$(awk -v m="$m" '$1 ~ "(^|:)"m"@" && $3 == "ok"' "$dir/logs/trace-$tag.out" | wc -l)
                if [ "$ok" -eq 0 ]; then
                    failed="$(grep -m1 'error' "$dir/logs/trace-$tag.err" || echo "agent trace: $(awk 'NR > 1 && $3 != "ok"' "$dir/logs/trace-$tag.out" | head -n 1)")"
                    return
                fi
                log "[$i/$n_models] $m: some traces failed (kept as failed, excluded from the fit): $dir/logs/trace-$tag.out"
            fi
        done
    done
}

# record CNN ROUND INDEX: what `measure` left.
record() {
    local m=$1 r=$2 i=$3
    if [ -n "$failed" ]; then
        log "[$i/$n_models] $m failed in round $r: $failed"
        printf '%s\t%s\n' "$m" "$(echo "$failed" | tr '\t\n' '  ' | cut -c1-300)" >>"$dir/failed"
    else
        echo "$m $r" >>"$dir/rounds_done"
        [ "$r" -lt "$rounds" ] || grep -qx "$m" "$dir/done" || echo "$m" >>"$dir/done"
    fi
}

budget_left() {
    local elapsed=$(( $(date +%s) - started ))
    [ "$time_budget" -eq 0 ] || [ "$elapsed" -lt $((time_budget * 60)) ]
}

budget_spent=0
for r in $(seq 1 "$rounds"); do
    [ "$analyze_only" -eq 0 ] && [ "$budget_spent" -eq 0 ] || break
    i=0
    for m in "${all_models[@]}"; do
        i=$((i + 1))
        if grep -qx "$m $r" "$dir/rounds_done"; then continue; fi
        if grep -q "^$m	" "$dir/failed"; then
            [ "$r" -gt 1 ] || [ "$retry_failed" -eq 1 ] \
                || log "[$i/$n_models] $m: failed in an earlier run ($(grep "^$m	" "$dir/failed" | cut -f2 | head -n 1)); --retry-failed tries again"
            [ "$retry_failed" -eq 1 ] || continue
        fi
        if ! budget_left; then
            log "time budget of $time_budget min spent: round $r from $m on is left for a later run"
            budget_spent=1
            break
        fi
        sed -i "/^$m	/d" "$dir/failed"
        measure "$m" "$r" "$i" </dev/null
        record "$m" "$r" "$i"
    done
done

# ---- points whose rounds disagree, measured again -----------------------------
# The rule (part of the settings): once every round is measured, a point (CNN,
# device, size, batch) whose rounds' trace medians spread, (max - min) /
# median, more than REMEASURE_FACTOR times the median spread of its device's
# points, and by at least REMEASURE_MIN_PCT %, has its CNN measured again in
# an extra round (every device and size; the K-th after round R is RxK), at
# most remeasure_max extra rounds per CNN after the last regular round: a round
# taken in a bad period is outvoted, and the truth and its noise floor count
# the extra rounds. Each extra round is decided on every round before it.
REMEASURE_FACTOR=2
REMEASURE_MIN_PCT=5
for extra in $(seq 1 "$remeasure_max"); do
    [ "$analyze_only" -eq 0 ] && [ "$budget_spent" -eq 0 ] && [ "$remeasure_max" -gt 0 ] || break
    # every CNN's rounds first (measured, or failed)
    settled=$(( $(wc -l <"$dir/done") + $(cut -f1 "$dir/failed" | sort -u | wc -l) ))
    [ "$settled" -ge "$n_models" ] || break
    r=$(bench_extra_round "$rounds" "$extra" "$dir/rounds_done")
    again=$(python3 "$repo/bench/accuracy_remeasure.py" "$dir" "$r" "$REMEASURE_FACTOR" \
        "$REMEASURE_MIN_PCT" "${all_models[@]}")
    [ -n "$again" ] || break
    i=0
    while read -r m worst_pct; do
        i=$((i + 1))
        grep -qx "$m $r" "$dir/rounds_done" && continue
        budget_left || { log "time budget of $time_budget min spent: extra round $r left for a later run"; budget_spent=1; break; }
        log "$m: its rounds disagree (spread up to $worst_pct %): measured again in round $r"
        measure "$m" "$r" "$i" </dev/null
        if [ -n "$failed" ]; then # its earlier rounds stand
            log "$m: extra round $r failed ($failed); its earlier rounds stand"
        fi
        echo "$m $r" >>"$dir/rounds_done"
    done <<<"$again"
done
measure_s=$(( $(date +%s) - started ))
load_measure=$(bench_monitor_stop)

# ---- through the pipeline ------------------------------------------------------
if [ "$report_only" -eq 0 ]; then
    dsn=$("$repo/deploy/pg-local.sh" start "$dir/pg" | tail -n 1)
    "$aggregator" migrate --db "$dsn" >/dev/null
    [ -f "$dir/aggregator/aggregator.key" ] || "$aggregator" keygen --keys "$dir/aggregator" >/dev/null
    # Every agent state that measured (the study's and the outside CNNs') gets
    # its key and the aggregator's, and is allowed, before the servers start.
    for t in "${device_keys[@]}"; do
        for state in "$dir/agent-$t" "$dir/outside-agent-$t"; do
            [ "$state" = "$dir/agent-$t" ] || [ "${#outside_list[@]}" -gt 0 ] || continue
            [ -f "$state/agent.key" ] || "$agent" keygen --state "$state" >/dev/null
            cp "$dir/aggregator/aggregator.pub" "$state/aggregator.pub"
            grep -qxF "$(cat "$state/agent.pub")" "$dir/aggregator/allowlist" 2>/dev/null \
                || cat "$state/agent.pub" >>"$dir/aggregator/allowlist"
        done
    done
    # serve_start DSN: `aggregator serve` into DSN on a free port (serve_pid, endpoint).
    serve_start() {
        endpoint=tcp://127.0.0.1:$(bench_free_port)
        "$aggregator" serve --listen "$endpoint" --db "$1" --keys "$dir/aggregator" >>"$dir/logs/aggregator.log" 2>&1 &
        server_pid=$!
        sleep 1
        kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$dir/logs/aggregator.log" >&2; log "aggregator serve did not start"; exit 1; }
    }
    serve_stop() { kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=; }
    # push STATE PREFIX DEVICE_KEY KIND...: every round's result files of those
    # kinds (PREFIX: "" for the study's, outside- for the outside CNNs'), round
    # by round, by the files there are, so that no round's label is missed.
    push() {
        local state=$1 prefix=$2 t=$3 files=() f r kind labels
        shift 3
        labels=$(for kind in "$@"; do
            for f in "$dir/$prefix$kind-$t-r"*.tcr; do if [ -s "$f" ]; then echo "${f##*-r}"; fi; done
        done | sed 's/\.tcr$//' | sort -uV)
        for r in $labels; do
            for kind in "$@"; do
                f="$dir/$prefix$kind-$t-r$r.tcr"
                if [ -s "$f" ]; then files+=("$f"); fi
            done
        done
        [ "${#files[@]}" -gt 0 ] || return 0
        log "agent push (${device_flags[$t]#--device }): ${files[*]}"
        TRAINCAST_PROGRESS=plain "$agent" push --aggregator "$endpoint" --state "$state" --timeout 900 "${files[@]}" \
            >>"$dir/logs/push.log" 2>&1 || { tail -n 20 "$dir/logs/push.log" >&2; log "agent push failed"; exit 1; }
    }
    serve_start "$dsn"
    for t in "${device_keys[@]}"; do
        push "$dir/agent-$t" "" "$t" bench trace
        # The outside CNNs' conv benchmarks only: their traces never reach the fit.
        [ "${#outside_list[@]}" -eq 0 ] || push "$dir/outside-agent-$t" outside- "$t" bench
    done
    serve_stop
    if [ "${#outside_list[@]}" -gt 0 ]; then
        # Their measured times, in a database of their own.
        outside_dsn=${dsn%/*}/outside
        psql -X -q "$dsn" -tA -c "SELECT 1 FROM pg_database WHERE datname = 'outside'" | grep -q 1 \
            || psql -X -q "$dsn" -c "CREATE DATABASE outside" >/dev/null
        "$aggregator" migrate --db "$outside_dsn" >/dev/null
        serve_start "$outside_dsn"
        for t in "${device_keys[@]}"; do push "$dir/outside-agent-$t" outside- "$t" trace; done
        serve_stop
        # their ids without the size: torchvision:NAME, or python:STEM.FUNC
        outside_ids=$(for m in "${outside_list[@]}"; do
            if [[ ${spec_of[$m]} == torchvision:* ]]; then echo "torchvision:$m"; else echo "python:$m"; fi
        done | paste -sd,)
        leaked=$(psql -X -tA "$dsn" -c "SELECT count(*) FROM traces WHERE model_id LIKE ANY (SELECT m || '@%' FROM unnest(string_to_array('$outside_ids', ',')) m)")
        [ "$leaked" -eq 0 ] || { log "$leaked traces of an --outside CNN reached the study's database; the check would not be blind"; exit 1; }
    fi

    log "aggregator fit"
    fit_st=0
    TRAINCAST_PROGRESS=plain "$aggregator" fit --db "$dsn" >"$dir/logs/fit.out" 2>"$dir/logs/fit.err" || fit_st=$?
    [ "$fit_st" -eq 0 ] || { cat "$dir/logs/fit.err" >&2; log "aggregator fit failed (exit $fit_st); the report says why"; }

    # Every analysis the report shows, each one `aggregator validate --format
    # json` (nested: each held-out group's model chosen and fitted without it):
    #   main        hold out one CNN, the geometric mean of the rounds (the default)
    #   family      hold out a whole family (all resnets, all mobilenets, ...)
    #   batch       hold out one batch size of every CNN
    #   median, p10, min
    #               other statistics of the rounds, on both sides (median: the
    #               default before schema 017)
    #   memory      the memory-bound classes summed in one feature (memory.elems), the
    #               default candidates before this study preferred them apart
    #   baseline    the published method's form: every aggregated non-conv
    #               feature, ordinary least squares, no selection
    #   disturbed   the traces taken while other processes used the machine
    #               kept (aggregator fit --include-disturbed), against main
    #   apart-cnns, apart-modern
    #               where the study has both (4 or more of each with a round
    #               measured): the CNNs of 2012-2019 alone and the ConvNeXts and
    #               transformers alone (validate --models), to set beside their
    #               errors in main, where every model is fitted together
    #   cnns-before the CNNs alone with their matmuls regressed (where main
    #               benchmarks matmuls): the method before matmuls were
    #               benchmarked, set CNN by CNN beside main's errors
    baseline_features=total.one,total.params,bn.elems,act.elems,pool.elems,eltwise.elems,concat.elems,gemm.flops
    memory_candidates=total.one,nonconv.layers,conv.layers,bn.elems,memory.elems,total.params,gemm.flops,conv.ms
    analyses=(
        "main|"
        "family|--holdout family"
        "batch|--holdout batch"
        "median|--stat median"
        "p10|--stat p10"
        "min|--stat min"
        "memory|--candidates $memory_candidates"
        "baseline|--features $baseline_features --forms ols --weightings none"
        "disturbed|--include-disturbed"
        "regress-matmuls|--regress-matmuls"
    )
    # has_rounds CNN: it has a round measured and never failed; the analysis
    # uses every round there is (the study's models and the outside CNNs alike).
    has_rounds() { grep -q "^$1 " "$dir/rounds_done" && ! grep -q "^$1	" "$dir/failed"; }
    # The study's models with a round measured, by kind: the report's own split
    # (bench/accuracy_fmt.py kind: the fit's families, MODERN_FAMILIES).
    measured=()
    for m in "${model_list[@]}"; do
        if has_rounds "$m"; then measured+=("$m"); fi
    done
    apart_cnns=() apart_modern=()
    if [ "${#measured[@]}" -gt 0 ]; then
        mapfile -t kinds < <("$bench_python" "$repo/bench/accuracy_fmt.py" kind "${measured[@]}")
        for i in "${!measured[@]}"; do
            if [ "${kinds[$i]}" = modern ]; then apart_modern+=("${measured[$i]}"); else apart_cnns+=("${measured[$i]}"); fi
        done
    fi
    if [ "${#apart_cnns[@]}" -ge 4 ] && [ "${#apart_modern[@]}" -ge 4 ]; then
        cnn_list=$(IFS=,; echo "${apart_cnns[*]}")
        analyses+=("apart-cnns|--models $cnn_list"
            "apart-modern|--models $(IFS=,; echo "${apart_modern[*]}")"
            "cnns-before|--models $cnn_list --regress-matmuls")
    fi
    val_st=0
    validate_args=()
    for entry in "${analyses[@]}"; do
        name=${entry%%|*}
        args=${entry#*|}
        if [ -n "$only_analyses" ] && [ "$name" != main ] && [[ ",$only_analyses," != *",$name,"* ]]; then
            continue
        fi
        log "aggregator validate ($name${args:+: $args})"
        st=0
        # shellcheck disable=SC2086
        TRAINCAST_PROGRESS=plain "$aggregator" validate --db "$dsn" --format json $args \
            >"$dir/validate-$name.json" 2>"$dir/logs/validate-$name.err" || st=$?
        if { [ "$name" = regress-matmuls ] || [ "$name" = cnns-before ]; } && [ "$st" -eq 0 ] &&
            ! grep -q '"benchmarked": "conv,matmul"' "$dir/validate-main.json" 2>/dev/null; then
            # the same analysis as main or apart-cnns: no matmul was benchmarked
            rm -f "$dir/validate-$name.json"
            continue
        fi
        if [ "$st" -ne 0 ]; then
            log "aggregator validate ($name) failed (exit $st): $(tail -n 1 "$dir/logs/validate-$name.err")"
            [ "$name" = main ] && val_st=$st
            rm -f "$dir/validate-$name.json"
            continue
        fi
        validate_args+=(--validate "$name=$dir/validate-$name.json")
    done
    TRAINCAST_PROGRESS=plain "$aggregator" validate --db "$dsn" >"$dir/logs/validate.txt" 2>&1 || true
    # Where the truths' noise comes from, and the rounds the floor goal needs (bench/trace_noise.py).
    rm -f "$dir/logs/trace-noise.json"
    "$bench_python" "$repo/bench/trace_noise.py" "$dsn" --json "$dir/logs/trace-noise.json" \
        >"$dir/logs/trace-noise.txt" 2>"$dir/logs/trace-noise.err" \
        || log "trace_noise.py failed: $(tail -n 1 "$dir/logs/trace-noise.err")"
    # The load every measurement was taken under (schema/011_load.sql).
    psql -X -q -tA -F$'\t' "$dsn" -c "SELECT device, kind, measured, disturbed, remeasured,
        with_load, round(coalesce(median_others_pct, 0)::numeric, 1),
        round(coalesce(max_others_pct, 0)::numeric, 1) FROM measurement_load ORDER BY 1, 2" \
        >"$dir/conditions.tsv" 2>>"$dir/logs/validate.txt" || : >"$dir/conditions.tsv"

    # Where the non-conv time goes: the profiler's time per op class of every
    # traced step (one profiled step per trace), per device and class.
    psql -X -q -tA -F$'\t' "$dsn" -c "
        SELECT d.name, o.op_class, sum(o.ms), count(DISTINCT t.trace_id)
        FROM trace_op_times o JOIN traces t USING (trace_id) JOIN devices d USING (device_id)
        WHERE t.status = 'ok'
        GROUP BY d.name, o.op_class ORDER BY d.name, 3 DESC" >"$dir/op_times.tsv"
    # Each traced step's time per op class, and each CNN's layers per class: how
    # well every class follows its feature (the report's class table).
    psql -X -q -tA -F$'\t' "$dsn" -c "
        SELECT d.name, t.model_id, t.batch, t.trace_id, t.median_ms, o.op_class, o.ms
        FROM trace_op_times o JOIN traces t USING (trace_id) JOIN devices d USING (device_id)
        WHERE t.status = 'ok' AND t.median_ms > 0" >"$dir/op_points.tsv"
    psql -X -q -tA -F$'\t' "$dsn" -c "
        SELECT l.model_id, l.op_class, count(*), sum(l.params), sum(l.flops), sum(l.elems_in + l.elems_out),
               sum(l.elems_out)
        FROM model_layers l WHERE l.model_id IN (SELECT model_id FROM traces)
        GROUP BY 1, 2" >"$dir/class_layers.tsv"
    psql -X -q -tA -F$'\t' "$dsn" -c "
        SELECT d.name, count(DISTINCT t.model_id), count(*) FILTER (WHERE t.status = 'ok'),
               count(*) FILTER (WHERE t.status <> 'ok'),
               (SELECT count(*) FROM conv_results r JOIN devices d2 USING (device_id) WHERE d2.name = d.name)
        FROM traces t JOIN devices d USING (device_id) GROUP BY d.name ORDER BY d.name" >"$dir/stored.tsv"

    # The outside CNNs: predicted by the fit on the study's CNNs from their ONNX
    # export and conv benchmarks, and measured (the geometric mean of their rounds,
    # the fit's statistic).
    outside_args=()
    if [ "${#outside_list[@]}" -gt 0 ] && [ "$fit_st" -eq 0 ]; then
        for m in "${outside_list[@]}"; do
            has_rounds "$m" || { log "outside CNN $m has no round measured, or failed; not predicted"; continue; }
            for px in "${size_list[@]}"; do
                log "aggregator predict (outside the study: $m, $px px)"
                st=0
                TRAINCAST_PROGRESS=plain "$aggregator" predict --db "$dsn" --model "${spec_of[$m]}" --input-size "$px" \
                    --batch "$batches" --gpu all --wait 0 --no-store --format csv \
                    >"$dir/outside-pred-$m-$px.csv" 2>"$dir/logs/outside-pred-$m-$px.err" || st=$?
                # 3: some rows could not be predicted; each row says why.
                [ "$st" -eq 0 ] || [ "$st" -eq 3 ] || log "aggregator predict ($m, $px px) failed (exit $st): $(tail -n 1 "$dir/logs/outside-pred-$m-$px.err")"
                outside_args+=(--outside-pred "$dir/outside-pred-$m-$px.csv")
            done
        done
        psql -X -q -tA -F$'\t' "$outside_dsn" -c "
            SELECT device, model_id, batch, traces, geomean_ms, spread_between_traces
            FROM trace_summary ORDER BY 2, 1, 3" >"$dir/outside-truth.tsv"
        outside_args+=(--outside-truth "$dir/outside-truth.tsv")
    fi
else
    # --report-only: the analyses the last run left in DIR, written up again
    # (after a change to the report, not to the data): nothing is pushed,
    # fitted or validated, and the load and conditions are those files' own.
    [ -s "$dir/validate-main.json" ] \
        || { log "$dir holds no analysis to report (validate-main.json): run with --analyze-only first"; exit 2; }
    val_st=0
    validate_args=()
    IFS=, read -r -a names <<<"$known_analyses"
    for name in "${names[@]}"; do
        [ ! -s "$dir/validate-$name.json" ] || validate_args+=(--validate "$name=$dir/validate-$name.json")
    done
    outside_args=()
    for f in "$dir"/outside-pred-*.csv; do
        [ ! -e "$f" ] || outside_args+=(--outside-pred "$f")
    done
    [ ! -s "$dir/outside-truth.tsv" ] || outside_args+=(--outside-truth "$dir/outside-truth.tsv")
fi

# Held-out predictions of the main analysis, for the chart.
rm -f "$dir/points.tsv"
if [ -s "$dir/validate-main.json" ]; then
    "$bench_python" - "$dir/validate-main.json" >"$dir/points.tsv" <<'PY'
import json, sys
for d in json.load(open(sys.argv[1]))["devices"]:
    for p in d.get("points", []):
        if p.get("held_out_ms") is not None:
            print("\t".join(str(v) for v in (d["device"], p["cnn"], p["batch"], p["measured_ms"],
                                              p["held_out_ms"])))
PY
fi
plot_note=
if [ -s "$dir/points.tsv" ]; then
    "$plotter" --in "$dir/points.tsv" --out "$plot" \
        --title "traincast on this CPU: predicted vs measured, ${input_sizes} px, batches $batches" \
        || plot_note="tc-plot-accuracy failed"
else
    plot_note="no held-out predictions to plot (fit needs at least 4 CNNs with traces per device)"
    rm -f "$plot"
fi

total_s=$(( $(date +%s) - started ))
report_flags=()
[ "$report_only" -eq 0 ] || report_flags+=(--report-only)
"$bench_python" "$repo/bench/accuracy_report.py" "${validate_args[@]}" \
    --validate-status "$val_st" --validate-err "$dir/logs/validate-main.err" \
    --op-times "$dir/op_times.tsv" --op-points "$dir/op_points.tsv" \
    --class-layers "$dir/class_layers.tsv" --stored "$dir/stored.tsv" --timeline "$dir/timeline.tsv" \
    --conditions "$dir/conditions.tsv" --trace-noise "$dir/logs/trace-noise.json" \
    --done "$dir/done" --failed "$dir/failed" --requested "$(IFS=,; echo "${model_list[*]}")" \
    --outside "$(IFS=,; echo "${outside_list[*]}")" "${outside_args[@]}" \
    --settings "$settings" --measure-s "$measure_s" --total-s "$total_s" --load "$load_measure" \
    --plot "$plot" --plot-link "$plot_link" --plot-note "$plot_note" --repo "$repo" \
    "${report_flags[@]}" --out "$out"
log "wrote $out${plot_note:+ ($plot_note)}"
cat "$out"
[ "$val_st" -eq 0 ]
