#!/usr/bin/env bash
# gpu-check.sh [options]
#
# Validates everything GPU-specific of traincast on a fresh NVIDIA machine in
# one go (about 10 minutes), with no network: the NVIDIA driver, PyTorch with
# CUDA and the Debian packages of deploy/setup.sh must already be there.
#
#   1. preflight: nvidia-smi sees a GPU, a Python whose torch sees it, tools
#   2. build with -DTRAINCAST_CUDA=ON into BUILD_DIR; the GPU tests (ctest -L
#      gpu: cuDNN convs against the reference, a GPU trace) when Criterion is
#      installed
#   3. agent info lists the GPU with its driver, CUDA and cuDNN versions
#   4. an embedded PostgreSQL (deploy/pg-local.sh in WORK/pg), aggregator serve
#   5. cuDNN conv benchmarks of the CNNs (traced ones and the held-out one) at
#      the batch sizes, under both policies (heuristic, exhaustive)
#   6. PyTorch GPU traces of the traced CNNs, cudnn.benchmark off and on (to
#      match the two policies), with the profiler's time per op class
#   7. agent push, aggregator fit, aggregator validate (leave-one-CNN-out)
#   8. aggregator predict --gpu all for the held-out CNN (never traced)
#   9. the summed conv benchmarks of each trace against the profiler's conv time
#  10. conv faithfulness (bench/gpu_conv_check.py): a dozen convs of the CNN set
#      (3x3, 1x1, 7x7 stride 2, depthwise, grouped, with a bias) at batch 32, in fp32
#      as PyTorch computes it by default and under AMP fp16: the agent's time per
#      direction against PyTorch's own call of the same conv; and one traced training
#      step (resnet18) against the agent's predicted conv sum
#
# --conv-check runs steps 1, 2 (with the routing test against PyTorch only), 3 and
# 10: the prepared check of what the agent times, in about 5 minutes of GPU time.
#
# It writes one Markdown report (--report, default WORK/report.md) and exits 0
# when every step passed, 1 at the first step that failed (the report and the
# last lines on stderr say which and why), 2 on bad usage.
#
# Options (defaults in brackets):
#   --device cuda:I       the GPU to check [cuda:0]
#   --models LIST         CNNs to benchmark and trace (4 or more) [resnet18,vgg11,squeezenet1_1,mobilenet_v2]
#   --held-out NAME       CNN benchmarked and predicted, never traced [resnet50]
#   --batches LIST        batch sizes [32,64]
#   --input-size PX       image size [224]
#   --repeat R            trace runs per (CNN, batch) [2]
#   --build-dir DIR       [build-gpu]       --no-build   use DIR as it is (built with CUDA)
#   --work DIR            [BUILD_DIR/gpu-check]
#   --report FILE         [WORK/report.md]
#   --conv-check          only steps 1-3 and 10 (the prepared conv check)
#   --conv-model NAME     the model of step 10's traced step [resnet18]
#   --dry-run             print the plan and exit
#   --cpu-rehearsal       run every step on the CPU device instead (no NVIDIA check, CUDA not
#                         forced, small CNNs at 64 px): tests this script where there is no GPU
# Environment: TRAINCAST_PYTHON, the Python with PyTorch (default: the first of
# $TRAINCAST_PYTHON, python3, /usr/bin/python3 whose torch sees the GPU).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
device=cuda:0
models=resnet18,vgg11,squeezenet1_1,mobilenet_v2
held_out=resnet50
batches=32,64
input_size=224
repeat=2
warmup=3
iters=10
bench_budget=100
max_reps=30
build_dir=$repo/build-gpu
work=
report=
do_build=1
dry_run=0
rehearsal=0
conv_check_only=0
conv_model=resnet18
conv_batch=32
conv_scale=1
conv_amp=fp16
conv_reps=30
conv_budget=300
conv_input=224

usage_error() { echo "gpu-check: $*" >&2; echo "gpu-check: see --help" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --device) device=$2; shift ;;
    --models) models=$2; shift ;;
    --held-out) held_out=$2; shift ;;
    --batches) batches=$2; shift ;;
    --input-size) input_size=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) do_build=0 ;;
    --work) work=$2; shift ;;
    --report) report=$2; shift ;;
    --dry-run) dry_run=1 ;;
    --conv-check) conv_check_only=1 ;;
    --conv-model) conv_model=$2; shift ;;
    --cpu-rehearsal)
        rehearsal=1; device=cpu
        models=squeezenet1_1,shufflenet_v2_x0_5,mnasnet0_5,mobilenet_v3_small; held_out=resnet18
        batches=2,4; input_size=64; repeat=1; warmup=1; iters=2; bench_budget=30; max_reps=10
        conv_model=squeezenet1_1; conv_batch=2; conv_scale=4; conv_amp=none; conv_reps=10
        conv_budget=30; conv_input=64 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) usage_error "unknown option '$1'" ;;
    esac
    [ $# -gt 0 ] && shift
done
[ "$rehearsal" -eq 1 ] || [[ $device =~ ^cuda:[0-9]+$ ]] || usage_error "--device must be cuda:INDEX (got '$device')"
IFS=, read -r -a model_list <<<"$models"
[ "${#model_list[@]}" -ge 4 ] || usage_error "--models needs 4 CNNs or more (leave-one-CNN-out validation needs 4)"
for m in "${model_list[@]}"; do [ "$m" != "$held_out" ] || usage_error "--held-out $held_out is also in --models"; done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || usage_error "--repeat must be a positive number (got '$repeat')"
case "$build_dir" in /*) ;; *) build_dir=$PWD/$build_dir ;; esac
work=${work:-$build_dir/gpu-check}
case "$work" in /*) ;; *) work=$PWD/$work ;; esac
report=${report:-$work/report.md}
case "$report" in /*) ;; *) report=$PWD/$report ;; esac
agent=$build_dir/agent/agent
aggregator=$build_dir/aggregator/aggregator
gpu_index=${device#cuda:}
[ "$rehearsal" -eq 1 ] && gpu_index=

plan() {
    cat <<EOF
gpu-check plan$([ "$rehearsal" -eq 1 ] && echo " (CPU rehearsal: every step on the cpu device)")
  device:     $device
  CNNs:       $models (benchmarked and traced), $held_out (benchmarked, predicted, never traced)
  batches:    $batches at ${input_size} px; traces: $repeat runs of $warmup + $iters iterations
  build:      $([ "$do_build" -eq 1 ] && echo "cmake -DTRAINCAST_CUDA=$([ "$rehearsal" -eq 1 ] && echo AUTO || echo ON) into $build_dir" || echo "use $build_dir as it is")
  work:       $work (database in $work/pg)
  report:     $report
steps:
  1 preflight     nvidia-smi, PyTorch with CUDA, cmake, nvcc, PostgreSQL
  2 build         configure and build; ctest -L gpu when Criterion is installed
  3 agent info    the GPU, driver, CUDA runtime and cuDNN versions
  4 database      pg-local.sh start, aggregator migrate, keys, aggregator serve
  5 conv bench    agent bench --policy heuristic and --policy exhaustive
  6 traces        agent trace, cudnn.benchmark off and on
  7 fit           agent push, aggregator fit, aggregator validate
  8 predict       aggregator predict --gpu all --model torchvision:$held_out
  9 conv check    summed conv benchmarks vs the profiler's conv time, per trace
 10 conv vs torch a dozen convs at batch $conv_batch (fp32$([ "$conv_amp" != none ] && echo ", AMP $conv_amp")): agent vs PyTorch's own call;
                  one traced step of $conv_model vs the predicted conv sum
$([ "$conv_check_only" -eq 1 ] && echo "(--conv-check: steps 1, 2 (routing test only), 3 and 10)")
EOF
}
if [ "$dry_run" -eq 1 ]; then plan; exit 0; fi

mkdir -p "$work/logs" "$work/sections" "$(dirname "$report")"
rm -f "$work"/sections/*.md
started=$(date +%s)
steps=()      # "name<TAB>status<TAB>seconds<TAB>note"
fail_msg=
server_pid=

cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    "$repo/deploy/pg-local.sh" stop "$work/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT

section() { cat >>"$work/sections/$1.md"; }  # NAME < markdown
code_block() { echo '```'; cat; echo '```'; }

write_report() { # STATUS
    local status=$1 total=$(( $(date +%s) - started ))
    {
        echo "# traincast GPU check"
        echo
        echo "Written by \`deploy/gpu-check.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -n)."
        echo
        if [ "$status" = ok ]; then
            echo "**Result: every step passed** in $total s$([ "$total" -gt 600 ] && echo " (over the 10 minutes it should take; see the step times)")."
        else
            echo "**Result: FAILED** at step \"$status\" after $total s: $fail_msg"
        fi
        echo
        [ "$rehearsal" -eq 1 ] && { echo "CPU rehearsal: every step ran on the cpu device; nothing GPU-specific was checked."; echo; }
        echo "## Steps"
        echo
        echo "| step | status | seconds | notes |"
        echo "|---|---|---:|---|"
        for s in "${steps[@]}"; do
            IFS=$'\t' read -r n st sec note <<<"$s"
            echo "| $n | $st | $sec | ${note//|/\\|} |"
        done
        echo
        echo "## Machine"
        echo
        echo "- $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) logical CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
        echo "- settings: device $device; CNNs $models; held out $held_out; batches $batches at ${input_size} px; $repeat trace runs of $warmup + $iters iterations"
        echo
        local f
        for f in "$work"/sections/*.md; do
            [ -e "$f" ] || continue
            cat "$f"
            echo
        done
    } >"$report"
}

die_step() { # NAME MESSAGE
    fail_msg=$2
    write_report "$1"
    echo "gpu-check: FAILED at $1: $2" >&2
    echo "gpu-check: report: $report" >&2
    exit 1
}

run_step() { # NAME FUNCTION
    local name=$1 fn=$2 t0 note
    echo "gpu-check: == $name" >&2
    t0=$(date +%s)
    fail_msg=
    step_note=
    if "$fn"; then
        note=$step_note
        steps+=("$name"$'\t'"ok"$'\t'"$(( $(date +%s) - t0 ))"$'\t'"$note")
    else
        steps+=("$name"$'\t'"FAILED"$'\t'"$(( $(date +%s) - t0 ))"$'\t'"${fail_msg:-see the log}")
        die_step "$name" "${fail_msg:-see the logs in $work/logs}"
    fi
}

# Last lines of a log, for a failure message.
tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-600; }

# ---- 1 preflight ------------------------------------------------------------------
python_info=
step_preflight() {
    local notes=() p
    if [ "$rehearsal" -eq 0 ]; then
        if ! command -v nvidia-smi >/dev/null 2>&1; then
            fail_msg="no NVIDIA GPU/driver: nvidia-smi is not installed (install the NVIDIA driver; this check needs a machine with an NVIDIA GPU)"
            return 1
        fi
        local smi
        if ! smi=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$smi"; then
            fail_msg="no NVIDIA GPU/driver: nvidia-smi -L failed: $(echo "$smi" | head -n 2 | tr '\n' ' ')"
            return 1
        fi
        grep -q "^GPU $gpu_index:" <<<"$smi" || { fail_msg="no NVIDIA GPU/driver: there is no GPU $gpu_index (nvidia-smi -L: $(echo "$smi" | tr '\n' ' '))"; return 1; }
        nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,compute_cap --format=csv >"$work/logs/nvidia-smi.csv" 2>&1 \
            || nvidia-smi >"$work/logs/nvidia-smi.csv" 2>&1 || true
        { echo "## GPU"; echo; code_block <"$work/logs/nvidia-smi.csv"; } | section 01-gpu
        notes+=("$(grep "^GPU $gpu_index:" <<<"$smi" | cut -c1-80)")
    fi
    # A Python whose torch sees the GPU (or any torch in a rehearsal).
    local tried=() want='import sys, torch, torchvision; ok = torch.cuda.is_available() or sys.argv[1] == "cpu"; print("torch %s, torchvision %s, CUDA %s, cuDNN %s, GPUs %d" % (torch.__version__, torchvision.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.device_count())); sys.exit(0 if ok else 3)'
    local out
    for p in ${TRAINCAST_PYTHON:-} python3 /usr/bin/python3; do
        command -v "$p" >/dev/null 2>&1 || continue
        if out=$("$p" -c "$want" "${device%%:*}" 2>&1); then
            export TRAINCAST_PYTHON=$(command -v "$p")
            python_info="$TRAINCAST_PYTHON: $out"
            break
        fi
        tried+=("$p ($(echo "$out" | tail -n 1 | cut -c1-120))")
    done
    if [ -z "$python_info" ]; then
        fail_msg="no PyTorch with CUDA: tried ${tried[*]:-no python3 at all}; set TRAINCAST_PYTHON to a Python whose torch.cuda.is_available() is True"
        return 1
    fi
    notes+=("$python_info")
    command -v cmake >/dev/null 2>&1 || { fail_msg="cmake is not installed (deploy/setup.sh installs it)"; return 1; }
    if [ "$rehearsal" -eq 0 ] && [ "$do_build" -eq 1 ] && ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
        fail_msg="the CUDA toolkit (nvcc) is not installed: install it (and cuDNN) to build the agent's cuDNN backend"
        return 1
    fi
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
        || { fail_msg="the PostgreSQL server is not installed (Debian package 'postgresql'; deploy/setup.sh installs it)"; return 1; }
    command -v psql >/dev/null 2>&1 || { fail_msg="psql is not installed (Debian package 'postgresql-client')"; return 1; }
    step_note=$(IFS=';'; echo "${notes[*]}")
}

# ---- 2 build ------------------------------------------------------------------
step_build() {
    local cuda=ON tests=OFF
    [ "$rehearsal" -eq 1 ] && cuda=AUTO
    if [ "$do_build" -eq 1 ]; then
        pkg-config --exists criterion 2>/dev/null && tests=ON
        if ! cmake -S "$repo" -B "$build_dir" -DTRAINCAST_CUDA=$cuda -DTRAINCAST_TESTS=$tests >"$work/logs/configure.log" 2>&1; then
            fail_msg="cmake configure failed: $(grep -m2 -A2 'Error' "$work/logs/configure.log" | tr '\n' ' ' | cut -c1-500) (log: $work/logs/configure.log)"
            return 1
        fi
        if ! cmake --build "$build_dir" -j"$(nproc)" >"$work/logs/build.log" 2>&1; then
            fail_msg="build failed: $(grep -m3 'error' "$work/logs/build.log" | tr '\n' ' ' | cut -c1-500) (log: $work/logs/build.log)"
            return 1
        fi
    fi
    [ -x "$agent" ] && [ -x "$aggregator" ] || { fail_msg="$agent or $aggregator is missing (build first, or drop --no-build)"; return 1; }
    step_note="traincast built in $build_dir (TRAINCAST_CUDA=$cuda)"
    if [ -f "$build_dir/CTestTestfile.cmake" ] && grep -q 'TRAINCAST_TESTS:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null && [ "$rehearsal" -eq 0 ]; then
        local which=(-L gpu)
        [ "$conv_check_only" -eq 1 ] && which=(-R test_cuda_route)
        if ! (cd "$build_dir" && ctest "${which[@]}" -V --timeout 600) >"$work/logs/ctest-gpu.log" 2>&1; then
            fail_msg="GPU tests failed: $(grep -E 'Failed|FAILED|failed' "$work/logs/ctest-gpu.log" | head -n 3 | tr '\n' ' ' | cut -c1-500) (log: $work/logs/ctest-gpu.log)"
            return 1
        fi
        # Criterion counts skipped tests as not tested: every GPU test must have run.
        if ! grep -q 'Synthesis: Tested:' "$work/logs/ctest-gpu.log" \
            || grep -qE 'Synthesis: Tested: 0 |\[SKIP\]' "$work/logs/ctest-gpu.log"; then
            fail_msg="GPU tests did not run on the GPU (skipped): $(grep -m2 -E 'SKIP|Synthesis' "$work/logs/ctest-gpu.log" | tr '\n' ' ' | cut -c1-400) (log: $work/logs/ctest-gpu.log)"
            return 1
        fi
        { echo "## GPU tests (ctest -L gpu)"; echo; grep -E 'tests passed|Test +#|Synthesis' "$work/logs/ctest-gpu.log" | code_block; } | section 02-tests
        step_note+="; GPU tests passed"
    else
        step_note+="; GPU tests not built (install libcriterion-dev to run them)"
    fi
}

# ---- 3 agent info -------------------------------------------------------------------
step_info() {
    if ! "$agent" info >"$work/logs/info.txt" 2>&1; then
        fail_msg="agent info failed: $(tail_of "$work/logs/info.txt")"
        return 1
    fi
    { echo "## agent info"; echo; code_block <"$work/logs/info.txt"; } | section 03-info
    if [ "$rehearsal" -eq 0 ]; then
        if grep -q 'built without CUDA' "$work/logs/info.txt"; then
            fail_msg="the agent was built without CUDA: rebuild with -DTRAINCAST_CUDA=ON (drop --no-build)"
            return 1
        fi
        if ! grep -qE "^  $device +[^ ]" "$work/logs/info.txt"; then
            fail_msg="agent info lists no $device: $(grep -E '^  cuda' "$work/logs/info.txt" | tr '\n' ' ' | cut -c1-400)"
            return 1
        fi
        if grep -qE "^  $device +error:" "$work/logs/info.txt"; then
            fail_msg="agent info cannot open $device: $(grep -E "^  $device" "$work/logs/info.txt" | cut -c1-400)"
            return 1
        fi
        step_note=$(grep -E "^  $device " "$work/logs/info.txt" | sed 's/^ *//')
    else
        step_note=$(grep -E '^  cpu +[^ ]' "$work/logs/info.txt" | sed -n 2p | sed 's/^ *//')
    fi
}

# ---- 4 database and aggregator ------------------------------------------------------
dsn=
endpoint=
step_database() {
    if ! dsn=$("$repo/deploy/pg-local.sh" start "$work/pg" 2>"$work/logs/pg.log" | tail -n 1); then
        fail_msg="deploy/pg-local.sh start failed: $(tail_of "$work/logs/pg.log")"
        return 1
    fi
    # A fresh database per check, so the report describes this run only.
    local admin=$dsn
    dsn=${admin%/*}/gpu_check
    psql -X -q "$admin" -c "DROP DATABASE IF EXISTS gpu_check" -c "CREATE DATABASE gpu_check" >>"$work/logs/pg.log" 2>&1 \
        || { fail_msg="could not create the database: $(tail_of "$work/logs/pg.log")"; return 1; }
    "$aggregator" migrate --db "$dsn" >>"$work/logs/pg.log" 2>&1 || { fail_msg="aggregator migrate failed: $(tail_of "$work/logs/pg.log")"; return 1; }
    rm -rf "$work/keys" "$work/agent"
    "$aggregator" keygen --keys "$work/keys" >/dev/null
    "$agent" keygen --state "$work/agent" >/dev/null
    cat "$work/agent/agent.pub" >>"$work/keys/allowlist"
    cp "$work/keys/aggregator.pub" "$work/agent/"
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo $((20000 + RANDOM % 20000)))
    endpoint=tcp://127.0.0.1:$port
    "$aggregator" serve --listen "$endpoint" --db "$dsn" --keys "$work/keys" >"$work/logs/aggregator.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 50); do
        grep -q "listening on" "$work/logs/aggregator.log" 2>/dev/null && break
        sleep 0.2
    done
    kill -0 "$server_pid" 2>/dev/null || { fail_msg="aggregator serve did not start: $(tail_of "$work/logs/aggregator.log")"; return 1; }
    step_note="$dsn; aggregator on $endpoint"
}

# ---- 5 conv benchmarks ------------------------------------------------------------------
device_args=()
step_bench() {
    local p all_models
    all_models=$(printf 'torchvision:%s,' "${model_list[@]}" "$held_out")
    all_models=${all_models%,}
    local notes=()
    for p in heuristic exhaustive; do
        rm -f "$work/bench-$p.tcr"
        if ! TRAINCAST_PROGRESS=plain "$agent" bench --models "$all_models" --input-size "$input_size" \
            --batches "$batches" "${device_args[@]}" --policy "$p" --budget-ms "$bench_budget" --max-reps "$max_reps" \
            --out "$work/bench-$p.tcr" >"$work/logs/bench-$p.out" 2>"$work/logs/bench-$p.err"; then
            fail_msg="agent bench --policy $p failed: $(grep -m2 'error' "$work/logs/bench-$p.err" | tr '\n' ' ' | cut -c1-500)"
            return 1
        fi
        notes+=("$p: $(grep -m1 '^measured' "$work/logs/bench-$p.out" | cut -d, -f1)")
    done
    {
        echo "## Conv benchmarks"
        echo
        for p in heuristic exhaustive; do
            echo "\`agent bench --policy $p\`:"
            echo
            grep -E '^(device|plan|measured)' "$work/logs/bench-$p.out" | code_block
            echo
        done
    } | section 05-bench
    step_note=$(IFS=';'; echo "${notes[*]}")
}

# ---- 6 traces ---------------------------------------------------------------------------
step_traces() {
    local p flag st notes=()
    for p in heuristic exhaustive; do
        flag=()
        [ "$p" = exhaustive ] && flag=(--cudnn-benchmark)
        rm -f "$work/trace-$p.tcr"
        st=0
        TRAINCAST_PROGRESS=plain "$agent" trace --models "$models" --batches "$batches" --input-size "$input_size" \
            "${device_args[@]}" "${flag[@]}" --warmup "$warmup" --iters "$iters" --repeat "$repeat" --timeout 300 \
            --out "$work/trace-$p.tcr" >"$work/logs/trace-$p.out" 2>"$work/logs/trace-$p.err" || st=$?
        if [ "$st" -ne 0 ]; then
            fail_msg="agent trace (cudnn.benchmark $([ "$p" = exhaustive ] && echo on || echo off)) failed: $(awk 'NR > 1 && $3 != "ok"' "$work/logs/trace-$p.out" | head -n 2 | tr '\n' ' ' | cut -c1-500) $(grep -m1 error "$work/logs/trace-$p.err" | cut -c1-300)"
            return 1
        fi
        notes+=("$p: $(awk 'NR > 1 && $3 == "ok"' "$work/logs/trace-$p.out" | wc -l) traces ok")
    done
    {
        echo "## Training traces"
        echo
        for p in heuristic exhaustive; do
            echo "\`agent trace\`, cudnn.benchmark $([ "$p" = exhaustive ] && echo on || echo off):"
            echo
            code_block <"$work/logs/trace-$p.out"
            echo
        done
    } | section 06-traces
    step_note=$(IFS=';'; echo "${notes[*]}")
}

# ---- 7 push, fit, validate --------------------------------------------------------------
step_fit() {
    if ! TRAINCAST_PROGRESS=plain "$agent" push --aggregator "$endpoint" --state "$work/agent" --timeout 300 \
        "$work"/bench-*.tcr "$work"/trace-*.tcr >"$work/logs/push.log" 2>&1; then
        fail_msg="agent push failed: $(tail_of "$work/logs/push.log" 3)"
        return 1
    fi
    if ! TRAINCAST_PROGRESS=plain "$aggregator" fit --db "$dsn" >"$work/logs/fit.out" 2>"$work/logs/fit.err"; then
        fail_msg="aggregator fit failed: $(tail_of "$work/logs/fit.err" 3)"
        return 1
    fi
    if ! TRAINCAST_PROGRESS=plain "$aggregator" validate --db "$dsn" >"$work/logs/validate.txt" 2>"$work/logs/validate.err" \
        || ! "$aggregator" validate --db "$dsn" --format json >"$work/logs/validate.json" 2>>"$work/logs/validate.err"; then
        fail_msg="aggregator validate failed: $(tail_of "$work/logs/validate.err" 3)"
        return 1
    fi
    { echo "## aggregator validate"; echo; code_block <"$work/logs/validate.txt"; } | section 07-validate
    step_note=$(grep -m1 'sent' "$work/logs/push.log" | cut -c1-120)"; $(grep -E '^  all ' "$work/logs/validate.txt" | awk '{ printf "%sMAPE %s ", (NR > 1 ? "/ " : ""), $3 }')"
}

# ---- 8 predict ----------------------------------------------------------------------------
step_predict() {
    # Exit 3 is an answer with some rows not predicted (each says why).
    local rc=0
    TRAINCAST_PROGRESS=plain "$aggregator" predict --db "$dsn" --gpu all --model "torchvision:$held_out" \
        --input-size "$input_size" --batch "$batches" --wait 0 --plot "$work/predict-$held_out.svg" \
        >"$work/logs/predict.txt" 2>"$work/logs/predict.err" || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
        fail_msg="aggregator predict failed: $(tail_of "$work/logs/predict.err" 3)"
        return 1
    fi
    { echo "## aggregator predict --gpu all (held out: $held_out, never traced)"; echo; code_block <"$work/logs/predict.txt"; echo; echo "Chart: $work/predict-$held_out.svg"; } | section 08-predict
    step_note="$(grep -c . "$work/logs/predict.txt") lines; chart $work/predict-$held_out.svg"
}

# ---- 9 conv sum against the profiler ------------------------------------------------------
step_convcheck() {
    # Per successful trace: the conv benchmarks summed as the predictor sums them
    # (latest measurement, the trace's policy, no backward-data for a first
    # layer), how many of the needed items were found, and the profiler's conv
    # time of the trace's profiled iteration.
    if ! psql -X -q -tA -F$'\t' "$dsn" >"$work/logs/convcheck.tsv" 2>"$work/logs/convcheck.err" <<'SQL'
SELECT t.model_id, t.batch, coalesce(t.policy, 'heuristic'), round(t.median_ms::numeric, 2),
       round(s.conv_ms::numeric, 2), s.found, s.needed,
       round(o.ms::numeric, 2),
       CASE WHEN o.ms > 0 AND s.found = s.needed THEN round((s.conv_ms / o.ms)::numeric, 3) END
FROM traces t
LEFT JOIN trace_op_times o ON o.trace_id = t.trace_id AND o.op_class = 'conv'
CROSS JOIN LATERAL (
    SELECT sum(c.median_ms * mc.multiplicity) AS conv_ms, count(c.median_ms) AS found,
           count(*) AS needed
    FROM model_convs mc
    CROSS JOIN (VALUES ('fwd'), ('bwd_filter'), ('bwd_data')) AS dir(direction)
    LEFT JOIN latest_conv_time c ON c.device_id = t.device_id AND c.config_id = mc.config_id
         AND c.batch = t.batch AND c.direction = dir.direction
         AND c.policy = coalesce(t.policy, 'heuristic')
    WHERE mc.model_id = t.model_id AND (dir.direction <> 'bwd_data' OR NOT mc.first_layer)
) s
WHERE t.status = 'ok'
ORDER BY 3, 1, 2;
SQL
    then
        fail_msg="the conv comparison query failed: $(tail_of "$work/logs/convcheck.err" 3)"
        return 1
    fi
    [ -s "$work/logs/convcheck.tsv" ] || { fail_msg="no successful traces to compare"; return 1; }
    local incomplete no_profile
    incomplete=$(awk -F'\t' '$6 != $7' "$work/logs/convcheck.tsv" | wc -l)
    no_profile=$(awk -F'\t' '$8 == ""' "$work/logs/convcheck.tsv" | wc -l)
    {
        echo "## Summed conv benchmarks against the profiler's conv time"
        echo
        echo "Per trace: the conv benchmarks of the model at the trace's batch and policy, summed as"
        echo "the predictor sums them (items found / needed), against the conv time the PyTorch"
        echo "profiler recorded in the trace's profiled iteration. A ratio near 1 says the"
        echo "benchmarks time what training runs; the profiler also counts the framework's own"
        echo "work around each conv call, and profiles one iteration only."
        echo
        echo "| model | batch | policy | iteration (ms) | conv benchmarks (ms) | items | profiler conv (ms) | benchmarks / profiler |"
        echo "|---|---:|---|---:|---:|---:|---:|---:|"
        awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s/%s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, ($8 == "" ? "–" : $8), ($9 == "" ? "–" : $9) }' "$work/logs/convcheck.tsv"
        echo
        awk -F'\t' '$9 != "" { print $9 }' "$work/logs/convcheck.tsv" | sort -g | awk '{ a[NR] = $1 } END {
            if (NR) printf "Ratio over %d traces: median %.2f, range %.2f to %.2f.\n", NR, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR] }'
    } | section 09-convcheck
    if [ "$incomplete" -gt 0 ]; then
        fail_msg="$incomplete traces lack conv benchmarks for some of their convs (see the report's table)"
        return 1
    fi
    if [ "$no_profile" -gt 0 ]; then
        fail_msg="$no_profile traces have no profiler conv time (the trace runner's op_times_ms)"
        return 1
    fi
    step_note=$(awk -F'\t' '$9 != "" { print $9 }' "$work/logs/convcheck.tsv" | sort -g | awk '{ a[NR] = $1 } END { printf "benchmarks / profiler conv time: median %.2f over %d traces", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), NR }')
}

# ---- 10 conv faithfulness -----------------------------------------------------------------
step_conv_torch() {
    local threads=1 dev=$device
    [ "$rehearsal" -eq 1 ] && dev=cpu
    if ! "$TRAINCAST_PYTHON" "$repo/bench/gpu_conv_check.py" --agent "$agent" --device "$dev" \
        --work "$work/conv-check" --batch "$conv_batch" --scale "$conv_scale" --amp "$conv_amp" \
        --model "$conv_model" --input-size "$conv_input" --reps "$conv_reps" \
        --budget-ms "$conv_budget" --threads "$threads" --report "$work/logs/conv-check.md" \
        --json "$work/conv-check.json" >"$work/logs/conv-check.out" 2>"$work/logs/conv-check.err"; then
        fail_msg="bench/gpu_conv_check.py failed: $(tail_of "$work/logs/conv-check.err" 3)"
        return 1
    fi
    section 10-conv-torch <"$work/logs/conv-check.md"
    step_note=$(grep -E '^A/B over' "$work/logs/conv-check.md" | sed 's/ (goal.*//' | tr '\n' ';' | cut -c1-300)
}

if [ "$rehearsal" -eq 1 ]; then
    device_args=(--device cpu)
else
    device_args=(--device "$device")
fi
run_step "1 preflight" step_preflight
run_step "2 build" step_build
run_step "3 agent info" step_info
if [ "$conv_check_only" -eq 0 ]; then
    run_step "4 database" step_database
    run_step "5 conv bench" step_bench
    run_step "6 traces" step_traces
    run_step "7 fit" step_fit
    run_step "8 predict" step_predict
    run_step "9 conv check" step_convcheck
fi
run_step "10 conv vs torch" step_conv_torch
write_report ok
echo "gpu-check: every step passed in $(( $(date +%s) - started )) s; report: $report" >&2
