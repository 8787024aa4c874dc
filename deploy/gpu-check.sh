#!/usr/bin/env bash
# gpu-check.sh [options]
#
# Checks everything GPU-specific of traincast on an NVIDIA machine with no
# network. Two ways to run it:
#
# --conv-check (the first visit to a GPU; about 7 minutes, planned to end
# within --minutes, 8 by default): needs the NVIDIA driver and a Python
# whose PyTorch sees the GPU, nothing else: no PostgreSQL, no aggregator, no
# build when it runs from the relocatable bundle (deploy/package.sh
# --bundle), as any user. In order:
#   1 facts         the GPU, driver, PyTorch, CUDA, cuDNN, the TF32 flags, the
#                   CUDA libraries PyTorch loaded and those the agent loaded
#   2 routes        agent routes: the agent's conv routing against PyTorch's
#                   own choice for every conv of the CNN set
#   3 convs fp32    a dozen convs of the CNN set at batch 32: the agent's time
#   4 convs AMP     per direction against PyTorch's own call (fp32 as PyTorch
#                   computes it by default, then fp16 as AMP runs convs)
#   5 matmuls fp32  a dozen matmuls of vit_b_16, swin_t and convnext_tiny at
#   6 matmuls AMP   224 px, batch 32: one `agent bench` of their list (cuBLAS/cuBLASLt)
#                   per direction against PyTorch's own addmm/mm/bmm and their
#                   autograd nodes (fp32 without TF32, then as AMP runs them)
#   7 numerics      agent bench-conv --verify and bench-matmul --verify on
#                   small convs and matmuls of each kind
#   8 step fp32     one profiled training step of --conv-model: the agent's
#   9 step AMP      summed conv times against the profiler's conv time, and
#                   its summed matmul times against the profiler's gemm time
#  10 step          the same in fp32 for --step-transformer, whose step is
#     transformer   mostly matmuls; last, so that it runs only when the plan
#                   leaves time
# Every result is appended to WORK/results.jsonl as it completes; a conv or
# matmul that fails is recorded as failed and the rest go on; a step that runs out
# of its time is cut and the next one starts. The report (WORK/report.md)
# is written from whatever completed, also when the check is interrupted.
#
# Without --conv-check (from a source tree with the Debian packages of
# deploy/setup.sh, about 10 minutes): build with CUDA (the GPU tests when
# Criterion is there), agent info, an embedded PostgreSQL and aggregator
# serve, conv benchmarks of --models and --held-out under both policies,
# PyTorch traces (cudnn.benchmark off and on), push, fit, validate,
# predict --gpu all for the held-out CNN, the summed benchmarks against the
# profiler per trace, then the conv check's convs, matmuls and steps.
#
# Exit status: 0 when every step ran (its figures are reported, not judged),
# 1 when a step failed (the report and stderr say which and why), 2 on bad
# usage or a machine that cannot run the check (no GPU, no driver or one
# older than the agent's CUDA runtime, no PyTorch with CUDA): then one line
# says what is missing and nothing is written.
#
# Options (defaults in brackets):
#   --device cuda:I       the GPU to check [cuda:0]
#   --conv-check          the check above, without database or aggregator
#   --minutes M           the conv check's time plan [8]
#   --conv-model NAME     the model of the traced steps [resnet18]
#   --step-transformer NAME  the transformer of the last traced step, or none [vit_b_16]
#   --models LIST         CNNs to benchmark and trace (4 or more) [resnet18,vgg11,squeezenet1_1,mobilenet_v2]
#   --held-out NAME       CNN benchmarked and predicted, never traced [resnet50]
#   --batches LIST        batch sizes [32,64]
#   --input-size PX       image size [224]
#   --repeat R            trace runs per (CNN, batch) [2]
#   --build-dir DIR       [build-gpu]       --no-build   use DIR as it is (built with CUDA)
#   --work DIR            [BUILD_DIR/gpu-check; ./gpu-check from a bundle]
#   --report FILE         [WORK/report.md]
#   --dry-run             print the plan and exit
#   --cpu-rehearsal       run every step on the CPU device instead (no NVIDIA check, CUDA not
#                         forced, small CNNs at 64 px): tests this script where there is no GPU
# Environment: TRAINCAST_PYTHON, the Python with PyTorch (default: the first of
# $TRAINCAST_PYTHON, python3, /usr/bin/python3 whose torch sees the GPU).
set -euo pipefail

script_start=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
# From the relocatable bundle (gpu-check.sh at its top, bin/agent beside),
# or from a source tree (deploy/gpu-check.sh).
if [ -x "$here/bin/agent" ] && [ -d "$here/share/traincast/check" ]; then
    bundle=$here
    repo=
    check_py=$here/share/traincast/check/gpu_conv_check.py
else
    bundle=
    repo=$(cd "$here/.." && pwd)
    check_py=$repo/bench/gpu_conv_check.py
fi
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
build_dir=${repo:+$repo/build-gpu}
work=
report=
do_build=1
[ -n "$bundle" ] && do_build=0
dry_run=0
rehearsal=0
conv_check_only=0
minutes=8
conv_model=resnet18
step_transformer=vit_b_16
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
    --minutes) minutes=$2; shift ;;
    --conv-model) conv_model=$2; shift ;;
    --step-transformer) step_transformer=$2; shift ;;
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
[[ $minutes =~ ^[1-9][0-9]*$ ]] || usage_error "--minutes must be a positive number (got '$minutes')"
if [ -n "$bundle" ] && [ "$conv_check_only" -eq 0 ] && [ "$dry_run" -eq 0 ]; then
    usage_error "from the bundle only --conv-check runs (the full check builds traincast and runs PostgreSQL and the aggregator: run deploy/gpu-check.sh from a source tree for it)"
fi
if [ -n "$bundle" ]; then
    agent=$bundle/bin/agent
    aggregator=
    work=${work:-$PWD/gpu-check}
else
    case "$build_dir" in /*) ;; *) build_dir=$PWD/$build_dir ;; esac
    agent=$build_dir/agent/agent
    aggregator=$build_dir/aggregator/aggregator
    work=${work:-$build_dir/gpu-check}
fi
case "$work" in /*) ;; *) work=$PWD/$work ;; esac
report=${report:-$work/report.md}
case "$report" in /*) ;; *) report=$PWD/$report ;; esac
results=$work/results.jsonl
gpu_index=${device#cuda:}
[ "$rehearsal" -eq 1 ] && gpu_index=

plan() {
    if [ "$conv_check_only" -eq 1 ]; then
        cat <<EOP
gpu-check plan (conv check$([ "$rehearsal" -eq 1 ] && echo ", CPU rehearsal: every step on the cpu device")$([ -n "$bundle" ] && echo ", from the bundle $bundle"))
  device:     $device
  agent:      $agent$([ "$do_build" -eq 1 ] && echo " (built first into $build_dir)")
  work:       $work (results.jsonl as they complete; report.md)
  time plan:  $minutes minutes
steps:
  1 facts        nvidia-smi, PyTorch, CUDA, cuDNN, TF32 flags, the libraries loaded; agent info
  2 routes       agent routes: the conv routing against PyTorch's own choice, the CNN set
  3 convs fp32   a dozen convs at batch $conv_batch: agent vs PyTorch's own call, per direction
  4 convs AMP    the same in $conv_amp
  5 matmuls fp32 a dozen matmuls of vit_b_16, swin_t, convnext_tiny at batch $conv_batch: agent vs PyTorch
  6 matmuls AMP  the same in $conv_amp
  7 numerics     agent bench-conv and bench-matmul --verify, small convs and matmuls of each kind
  8 step fp32    one profiled training step of $conv_model (batch $conv_batch, ${conv_input} px) vs the conv and matmul sums
  9 step AMP     the same under AMP $conv_amp
 10 step transformer  the same for $step_transformer in fp32, when the plan leaves time
EOP
        return
    fi
    cat <<EOP
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
                  one traced step of $conv_model (and of $step_transformer) vs the predicted conv and matmul sums
EOP
}
if [ "$dry_run" -eq 1 ]; then plan; exit 0; fi

# ---- preflight: can this machine run the check at all? ----------------------------
# Nothing is written before it passes; a machine that cannot run the check
# gets one line and exit 2.
refuse() { echo "gpu-check: $*" >&2; exit 2; }
python_info=
smi_csv=
preflight() {
    if [ "$rehearsal" -eq 0 ]; then
        command -v nvidia-smi >/dev/null 2>&1 \
            || refuse "no NVIDIA GPU/driver: nvidia-smi is not installed (install the NVIDIA driver; this check needs a machine with an NVIDIA GPU)"
        local smi
        if ! smi=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$smi"; then
            refuse "no NVIDIA GPU/driver: nvidia-smi -L failed: $(echo "$smi" | head -n 2 | tr '\n' ' ')"
        fi
        grep -q "^GPU $gpu_index:" <<<"$smi" \
            || refuse "no NVIDIA GPU/driver: there is no GPU $gpu_index (nvidia-smi -L: $(echo "$smi" | tr '\n' ' '))"
        smi_csv=$(nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,compute_cap --format=csv 2>&1 || nvidia-smi 2>&1 || true)
    fi
    # A Python whose torch sees the GPU (or any torch in a rehearsal).
    local tried=() p out
    local want='import sys, torch, torchvision; ok = torch.cuda.is_available() or sys.argv[1] == "cpu"; print("torch %s, torchvision %s, CUDA %s, cuDNN %s, GPUs %d" % (torch.__version__, torchvision.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.device_count())); sys.exit(0 if ok else 3)'
    for p in ${TRAINCAST_PYTHON:-} python3 /usr/bin/python3; do
        command -v "$p" >/dev/null 2>&1 || continue
        if out=$("$p" -c "$want" "${device%%:*}" 2>&1); then
            export TRAINCAST_PYTHON=$(command -v "$p")
            python_info="$TRAINCAST_PYTHON: $out"
            break
        fi
        tried+=("$p ($(echo "$out" | tail -n 1 | cut -c1-120))")
    done
    [ -n "$python_info" ] \
        || refuse "no PyTorch with CUDA: tried ${tried[*]:-no python3 at all}; set TRAINCAST_PYTHON to a Python whose torch.cuda.is_available() is True"
    if [ "$do_build" -eq 1 ]; then
        command -v cmake >/dev/null 2>&1 || refuse "cmake is not installed (deploy/setup.sh installs it)"
        if [ "$rehearsal" -eq 0 ] && ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
            refuse "the CUDA toolkit (nvcc) is not installed: install it (and cuDNN) to build the agent's cuDNN backend, or run the check from the relocatable bundle (deploy/package.sh --bundle)"
        fi
    else
        [ -x "$agent" ] || refuse "$agent is missing (build first, or drop --no-build)"
        local v
        v=$("$agent" --version 2>&1) || refuse "the agent does not start here: $(echo "$v" | head -n 2 | tr '\n' ' ')"
        if [ "$rehearsal" -eq 0 ]; then
            local info
            info=$("$agent" info 2>&1) || refuse "agent info failed: $(echo "$info" | tail -n 2 | tr '\n' ' ')"
            local line
            line=$(awk -v d="$device" '/^devices:/ { on = 1 } on && ($1 == d || $1 == "cuda") { sub(/^ +/, ""); print; exit }' <<<"$info")
            if grep -q 'built without CUDA' <<<"$info"; then
                refuse "this agent was built without CUDA: rebuild it with -DTRAINCAST_CUDA=ON, install traincast-agent rather than traincast-agent-cpu, or use the relocatable bundle"
            elif grep -qi 'driver version is insufficient\|older than CUDA runtime' <<<"$line"; then
                refuse "the NVIDIA driver is older than the agent's CUDA runtime: ${line#*none: }"
            elif [ -z "$line" ] || grep -qE "^  ($device|cuda) +(none|error):" <<<"$line"; then
                refuse "the agent cannot open $device: ${line:-it is not listed by agent info}"
            fi
        fi
    fi
    if [ "$conv_check_only" -eq 0 ]; then
        ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
            || refuse "the PostgreSQL server is not installed (Debian package 'postgresql'; deploy/setup.sh installs it; or run --conv-check, which needs none)"
        command -v psql >/dev/null 2>&1 || refuse "psql is not installed (Debian package 'postgresql-client'; or run --conv-check)"
    fi
}
preflight

mkdir -p "$work/logs" "$work/sections" "$(dirname "$report")"
rm -f "$work"/sections/*.md "$results"
started=$(date +%s)
deadline=$((script_start + minutes * 60))  # the preflight counts too
steps=()      # "name<TAB>status<TAB>seconds<TAB>note"
fail_msg=
server_pid=
finished=

section() { cat >>"$work/sections/$1.md"; }  # NAME < markdown
code_block() { echo '```'; cat; echo '```'; }

write_report() { # STATUS
    local status=$1 total=$(( $(date +%s) - started ))
    {
        echo "# traincast GPU check"
        echo
        echo "Written by \`gpu-check.sh$([ "$conv_check_only" -eq 1 ] && echo " --conv-check")\` on $(date -u '+%Y-%m-%d %H:%M UTC'), host $(uname -n)."
        echo
        case "$status" in
        ok) echo "**Result: every step ran** in $total s$([ "$conv_check_only" -eq 1 ] && [ "$total" -gt $((minutes * 60)) ] && echo " (over the $minutes minutes planned; see the step times)")." ;;
        interrupted) echo "**Result: INTERRUPTED** after $total s; what completed is below." ;;
        running) echo "**Result: still running** ($total s so far): this report is written again after every step." ;;
        *) echo "**Result: FAILED** at step \"$status\" after $total s: $fail_msg" ;;
        esac
        echo
        [ "$rehearsal" -eq 1 ] && { echo "CPU rehearsal: every step ran on the cpu device; nothing GPU-specific was checked."; echo; }
        echo "## Steps"
        echo
        echo "| step | status | seconds | notes |"
        echo "|---|---|---:|---|"
        local s n st sec note
        for s in "${steps[@]}"; do
            IFS=$'\t' read -r n st sec note <<<"$s"
            echo "| $n | $st | $sec | ${note//|/\\|} |"
        done
        echo
        echo "## Machine"
        echo
        echo "- $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) logical CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
        echo "- $python_info"
        if [ "$conv_check_only" -eq 1 ]; then
            echo "- settings: device $device; agent $agent; convs at batch $conv_batch; steps of $conv_model at ${conv_input} px; plan $minutes minutes"
        else
            echo "- settings: device $device; CNNs $models; held out $held_out; batches $batches at ${input_size} px; $repeat trace runs of $warmup + $iters iterations"
        fi
        [ -n "$smi_csv" ] && { echo; echo "nvidia-smi:"; echo; echo "$smi_csv" | code_block; }
        echo
        local f
        for f in "$work"/sections/*.md; do
            [ -e "$f" ] || continue
            cat "$f"
            echo
        done
        if [ -s "$results" ]; then
            "$TRAINCAST_PYTHON" "$check_py" report --jsonl "$results" 2>/dev/null \
                || echo "(the results in $results could not be summarized)"
        fi
    } >"$report.tmp" && mv "$report.tmp" "$report"
}

part_pid=
on_exit() {
    local st=$?
    if [ -n "$part_pid" ]; then kill -TERM "$part_pid" 2>/dev/null || true; wait "$part_pid" 2>/dev/null || true; fi
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    [ -n "$repo" ] && "$repo/deploy/pg-local.sh" stop "$work/pg" >/dev/null 2>&1 || true
    if [ -z "$finished" ]; then
        write_report interrupted 2>/dev/null || true
        echo "gpu-check: interrupted; report of what completed: $report" >&2
    fi
    return $st
}
trap on_exit EXIT
trap 'exit 130' INT TERM

die_step() { # NAME MESSAGE
    fail_msg=$2
    write_report "$1"
    finished=1
    echo "gpu-check: FAILED at $1: $2" >&2
    echo "gpu-check: report: $report" >&2
    exit 1
}

step_note=
run_step() { # NAME FUNCTION
    local name=$1 fn=$2 t0
    echo "gpu-check: == $name" >&2
    t0=$(date +%s)
    fail_msg=
    step_note=
    if "$fn"; then
        steps+=("$name"$'\t'"ok"$'\t'"$(( $(date +%s) - t0 ))"$'\t'"$step_note")
    else
        steps+=("$name"$'\t'"FAILED"$'\t'"$(( $(date +%s) - t0 ))"$'\t'"${fail_msg:-see the log}")
        die_step "$name" "${fail_msg:-see the logs in $work/logs}"
    fi
}

# A step of the conv check: it gets at most CAP seconds, less when the time
# plan is running out; one that fails or runs out of time is reported and
# the check goes on.
part_seconds=
run_part() { # NAME CAP FUNCTION
    local name=$1 cap=$2 fn=$3 t0 left st
    t0=$(date +%s)
    left=$((deadline - t0))
    [ "$cap" -lt "$left" ] || cap=$left
    if [ "$cap" -lt 15 ]; then
        steps+=("$name"$'\t'"skipped"$'\t'"0"$'\t'"out of time: the plan of $minutes minutes is spent")
        echo "gpu-check: == $name: skipped, out of time" >&2
        return 0
    fi
    echo "gpu-check: == $name (at most $cap s)" >&2
    part_seconds=$cap
    step_note=
    fail_msg=
    st=0
    "$fn" || st=$?
    local took=$(( $(date +%s) - t0 ))
    if [ "$st" -eq 0 ]; then
        steps+=("$name"$'\t'"ok"$'\t'"$took"$'\t'"$step_note")
    elif [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
        steps+=("$name"$'\t'"cut"$'\t'"$took"$'\t'"ran out of its $cap s; what it completed is in the results. $step_note")
    else
        steps+=("$name"$'\t'"FAILED"$'\t'"$took"$'\t'"${fail_msg:-see $work/logs}")
    fi
    write_report running 2>/dev/null || true
}

# Last lines of a log, for a failure message.
tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-600; }

# CMD within the step's time, in the background so that a signal to this
# script stops it at once (on_exit stops the command too). Returns its
# status: 124 when it ran out of time.
within() { # LOG CMD...
    local logname=$1 st=0
    shift
    timeout -k 10 "$part_seconds" "$@" >"$work/logs/$logname.out" 2>"$work/logs/$logname.err" &
    part_pid=$!
    wait "$part_pid" || st=$?
    part_pid=
    return "$st"
}

# The conv check's Python part NAME with ARGS, within the step's time.
check_part() { # NAME LOG ARGS...
    local part=$1 logname=$2
    shift 2
    local threads=()
    [ "$rehearsal" -eq 1 ] && threads=(--threads 1)
    within "$logname" "$TRAINCAST_PYTHON" "$check_py" "$part" --jsonl "$results" \
        --agent "$agent" --device "$device" --work "$work/conv-check" "${threads[@]}" \
        --timeout "$part_seconds" "$@"
}

# ---- the build (from a source tree) --------------------------------------------------
step_build() {
    local cuda=ON tests=OFF
    [ "$rehearsal" -eq 1 ] && cuda=AUTO
    if [ "$do_build" -eq 1 ]; then
        pkg-config --exists criterion 2>/dev/null && [ "$conv_check_only" -eq 0 ] && tests=ON
        if ! cmake -S "$repo" -B "$build_dir" -DTRAINCAST_CUDA=$cuda -DTRAINCAST_TESTS=$tests >"$work/logs/configure.log" 2>&1; then
            fail_msg="cmake configure failed: $(grep -m2 -A2 'Error' "$work/logs/configure.log" | tr '\n' ' ' | cut -c1-500) (log: $work/logs/configure.log)"
            return 1
        fi
        if ! cmake --build "$build_dir" -j"$(nproc)" >"$work/logs/build.log" 2>&1; then
            fail_msg="build failed: $(grep -m3 'error' "$work/logs/build.log" | tr '\n' ' ' | cut -c1-500) (log: $work/logs/build.log)"
            return 1
        fi
    fi
    [ -x "$agent" ] || { fail_msg="$agent is missing (build first, or drop --no-build)"; return 1; }
    [ "$conv_check_only" -eq 1 ] || [ -x "$aggregator" ] || { fail_msg="$aggregator is missing (build first, or drop --no-build)"; return 1; }
    step_note="traincast built in $build_dir (TRAINCAST_CUDA=$cuda)"
    if [ "$conv_check_only" -eq 0 ] && [ -f "$build_dir/CTestTestfile.cmake" ] && grep -q 'TRAINCAST_TESTS:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null && [ "$rehearsal" -eq 0 ]; then
        if ! (cd "$build_dir" && ctest -L gpu -V --timeout 600) >"$work/logs/ctest-gpu.log" 2>&1; then
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
    elif [ "$conv_check_only" -eq 0 ]; then
        step_note+="; GPU tests not built (install libcriterion-dev to run them)"
    fi
}

# ---- agent info (the full check) ------------------------------------------------------
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
        if grep -qE "^  $device +(error|none):" "$work/logs/info.txt"; then
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


# ---- the conv check's steps ------------------------------------------------------------
part_facts() {
    check_part facts facts || { fail_msg="facts: $(tail_of "$work/logs/facts.err" 3)"; return 1; }
    # Every later agent call reuses PyTorch's answers instead of starting Python to ask.
    local harness=${TRAINCAST_HARNESS_DIR:-${bundle:+$bundle/share/traincast/harness}}
    harness=${harness:-$repo/agent/harness}
    local probe
    if probe=$("$TRAINCAST_PYTHON" "$harness/gpu_env.py" --probe --device "${device/cpu/cuda:0}" 2>/dev/null | tail -n 1) \
        && [[ $probe == '{"type": "probe"'* ]]; then
        export TRAINCAST_GPU_FRAMEWORK_PROBE=$probe
    fi
    "$agent" info >"$work/logs/info.txt" 2>&1 || true
    { echo "## agent info"; echo; code_block <"$work/logs/info.txt"; } | section 01-info
    step_note=$(grep -E "^  (cuda|cpu) +(cuDNN|oneDNN)" "$work/logs/info.txt" | sed 's/^ *//' | tr '\n' ';' | cut -c1-400)
}

part_routes() {
    if [ "$rehearsal" -eq 1 ]; then
        step_note="not on a CPU (routes are compared on a GPU)"
        return 0
    fi
    local st=0
    within routes "$agent" routes --device "$device" || st=$?
    { echo "## agent routes"; echo; cat "$work/logs/routes.out" "$work/logs/routes.err" | code_block; } | section 02-routes
    "$TRAINCAST_PYTHON" -c 'import json, sys; print(json.dumps({"part": "routes", "status": sys.argv[1], "summary": open(sys.argv[2]).read().strip().splitlines()[-1:] , "errors": open(sys.argv[3]).read().strip()[-600:]}))' \
        "$([ "$st" -eq 0 ] && echo ok || echo failed)" "$work/logs/routes.out" "$work/logs/routes.err" >>"$results" 2>/dev/null || true
    step_note=$(tail -n 1 "$work/logs/routes.out" | cut -c1-300)
    [ "$st" -eq 0 ] || { fail_msg="agent routes: $(tail_of "$work/logs/routes.err" 2) $(tail -n 1 "$work/logs/routes.out")"; return "$st"; }
}

ab_summary() { # conv|matmul DTYPE: the note of a convs or matmuls step
    "$TRAINCAST_PYTHON" - "$results" "$1" "$2" <<'PY' 2>/dev/null || true
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("part") == sys.argv[2] and r.get("dtype") == sys.argv[3]]
ok = sorted(r["ratio"] for r in rows if r.get("status") == "ok")
failed = len(rows) - len(ok)
if ok:
    print("%d directions, A/B median %.3f, %.0f %% within 0.85-1.15%s" % (
        len(ok), statistics.median(ok), 100 * sum(0.85 <= x <= 1.15 for x in ok) / len(ok),
        ", %d failed" % failed if failed else ""))
else:
    print("nothing measured on both sides (%d failed)" % failed)
PY
}

part_ab_in() { # convs|matmuls LOG-NAME DTYPE: the agent against PyTorch, item by item
    local st=0
    check_part "$1" "$1-$2" --dtype "$3" --batch "$conv_batch" --scale "$conv_scale" \
        --reps "$conv_reps" --budget-ms "$conv_budget" || st=$?
    step_note=$(ab_summary "${1%s}" "$3")
    [ "$st" -eq 0 ] || fail_msg="$(tail_of "$work/logs/$1-$2.err" 3)"
    return "$st"
}

part_ab_amp() { # convs|matmuls
    if [ "$conv_amp" = none ]; then step_note="no AMP on this device"; return 0; fi
    part_ab_in "$1" amp "$conv_amp"
}

part_convs_fp32() { part_ab_in convs fp32 fp32; }
part_convs_amp() { part_ab_amp convs; }
part_matmuls_fp32() { part_ab_in matmuls fp32 fp32; }
part_matmuls_amp() { part_ab_amp matmuls; }

part_numerics() {
    local st=0
    check_part numerics numerics || st=$?
    step_note=$("$TRAINCAST_PYTHON" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("part") == "numerics"]
ok = sum(r.get("status") == "ok" for r in rows)
bad = ["%s %s %s: %s" % (r.get("conv", r.get("matmul")), r["dtype"], r["layout"], r.get("status")) for r in rows if r.get("status") not in ("ok", "skipped")]
print("%d of %d convs and matmuls match the reference%s" % (ok, len(rows), ("; " + "; ".join(bad)) if bad else ""))' "$results" 2>/dev/null || true)
    [ "$st" -eq 0 ] || fail_msg="$(tail_of "$work/logs/numerics.err" 3)"
    return "$st"
}

step_summary() { # MODE MODEL
    "$TRAINCAST_PYTHON" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("part") == "step" and r.get("mode") == sys.argv[2]
        and r.get("model") == sys.argv[3]]
r = rows[-1] if rows else {}
if r.get("status") in ("ok", "partial"):
    print("iteration %.2f ms; conv sum %.2f ms against the profiler %.2f ms%s; matmul sum %.2f ms against its gemm %.2f ms%s" % (r["iteration_ms"], r["conv_sum_ms"], r["profiler_conv_ms"], "" if r.get("ratio") is None else " (%.3f)" % r["ratio"], r.get("matmul_sum_ms", 0), r.get("profiler_gemm_ms", 0), "" if r.get("matmul_ratio") is None else " (%.3f)" % r["matmul_ratio"]))
else:
    print(r.get("error", "no result")[:300])' "$results" "$1" "$2" 2>/dev/null || true
}

part_step_in() { # LOG-NAME AMP SUMMARY-MODE [MODEL]
    local st=0 model=${4:-$conv_model}
    check_part step "step-$1" --amp "$2" --model "$model" --batch "$conv_batch" \
        --input-size "$conv_input" --budget-ms "$conv_budget" || st=$?
    step_note=$(step_summary "$3" "$model")
    [ "$st" -eq 0 ] || fail_msg="$(tail_of "$work/logs/step-$1.err" 3)"
    return "$st"
}

part_step_fp32() { part_step_in fp32 none fp32; }

part_step_amp() {
    if [ "$conv_amp" = none ]; then step_note="no AMP on this device"; return 0; fi
    part_step_in amp "$conv_amp" "amp-$conv_amp"
}

part_step_transformer() {
    if [ "$step_transformer" = none ]; then step_note="none asked (--step-transformer none)"; return 0; fi
    part_step_in transformer none fp32 "$step_transformer"
}

if [ "$rehearsal" -eq 1 ]; then
    device_args=(--device cpu)
else
    device_args=(--device "$device")
fi
if [ "$conv_check_only" -eq 1 ]; then pre=; else pre="1 "; fi
steps+=("${pre}preflight"$'\t'"ok"$'\t'"0"$'\t'"$python_info")
if [ "$do_build" -eq 1 ] || [ "$conv_check_only" -eq 0 ]; then
    run_step "${pre:+2 }build" step_build
fi
if [ "$conv_check_only" -eq 1 ]; then
    # Caps (s) add up to a little more than the default plan of 8 minutes
    # without the transformer's step (no part takes all of its cap); each is
    # shortened when the plan runs out, and one with less than 15 s left is
    # skipped: the transformer's step, last, runs on what the others left.
    # The matmul steps time their dozen matmuls in one agent process, as the
    # conv steps their convs (8 s on a quiet 2-CPU rehearsal; a process per
    # matmul took 36).
    run_part "1 facts" 60 part_facts
    run_part "2 routes" 45 part_routes
    run_part "3 convs fp32" 80 part_convs_fp32
    run_part "4 convs AMP" 80 part_convs_amp
    run_part "5 matmuls fp32" 40 part_matmuls_fp32
    run_part "6 matmuls AMP" 40 part_matmuls_amp
    run_part "7 numerics" 40 part_numerics
    run_part "8 step fp32" 55 part_step_fp32
    run_part "9 step AMP" 55 part_step_amp
    run_part "10 step transformer" 60 part_step_transformer
else
    deadline=$((started + 86400))  # the full check has no plan to keep to
    run_step "3 agent info" step_info
    run_step "4 database" step_database
    run_step "5 conv bench" step_bench
    run_step "6 traces" step_traces
    run_step "7 fit" step_fit
    run_step "8 predict" step_predict
    run_step "9 conv check" step_convcheck
    run_part "10 convs fp32" 900 part_convs_fp32
    run_part "10 convs AMP" 900 part_convs_amp
    run_part "10 matmuls fp32" 900 part_matmuls_fp32
    run_part "10 matmuls AMP" 900 part_matmuls_amp
    run_part "10 step fp32" 900 part_step_fp32
    run_part "10 step AMP" 900 part_step_amp
    run_part "10 step transformer" 900 part_step_transformer
fi
finished=1
failed_parts=$(printf '%s\n' "${steps[@]}" | awk -F'\t' '$2 == "FAILED"' | cut -f1 | tr '\n' ',' | sed 's/,$//')
if [ -n "$failed_parts" ]; then
    fail_msg="these steps failed: $failed_parts (see the steps table)"
    write_report "${failed_parts%%,*}"
    echo "gpu-check: steps failed: $failed_parts; report: $report" >&2
    exit 1
fi
write_report ok
echo "gpu-check: every step ran in $(( $(date +%s) - started )) s; report: $report; results: $results" >&2
