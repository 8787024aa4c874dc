#!/bin/sh
# A trace runner without a framework, for the tests: it speaks the trace
# line protocol (docs/trace-protocol.md), or breaks it on purpose.
#
#   fake_runner.sh MODE [the agent's flags, ignored: settings are read from
#                        the TRAINCAST_TRACE_* variables]
#
# FAKE_STATE names a file that counts the runs; run k (1, 2, ...) reports
# every iteration as 10*k ms, so repeat medians are 10, 20, 30, ...
# FAKE_PIDFILE receives the pid of a process the "hang" modes leave running.
mode=$1
run=1
if [ -n "$FAKE_STATE" ]; then
    run=$(( $(cat "$FAKE_STATE" 2>/dev/null || echo 0) + 1 ))
    echo "$run" > "$FAKE_STATE"
fi
W=$TRAINCAST_TRACE_WARMUP
N=$TRAINCAST_TRACE_ITERS
batch=$TRAINCAST_TRACE_BATCH
[ "$mode" = mismatch ] && batch=$((batch + 1))

printf '{"type":"header","protocol":1,"framework":"fake","framework_version":"0.1",'
printf '"library":"none","library_version":"","device":"%s","device_name":"Fake Device",' \
    "$TRAINCAST_TRACE_DEVICE"
printf '"threads":%s,"model":"%s","batch":%s,"input_size":%s,"dtype":"%s","amp":"%s",' \
    "$TRAINCAST_TRACE_THREADS" "$TRAINCAST_TRACE_MODEL" "$batch" \
    "$TRAINCAST_TRACE_INPUT_SIZE" "$TRAINCAST_TRACE_DTYPE" "$TRAINCAST_TRACE_AMP"
printf '"optimizer":"%s","cudnn_benchmark":false,"warmup":%s,"iters":%s}\n' \
    "$TRAINCAST_TRACE_OPTIMIZER" "$W" "$N"
echo "fake runner: mode $mode, run $run" >&2

iter() { # index warmup ms at_us
    printf '{"type":"iter","index":%s,"warmup":%s,"ms":%s,"at_us":%s}\n' "$1" "$2" "$3" "$4"
}

case $mode in
oom)
    iter 0 true 5 1700000000000000
    echo '{"type":"oom","message":"CUDA out of memory. Tried to allocate 2.00 GiB"}'
    exit 3 ;;
oom_exit_only)
    exit 3 ;;
crash)
    iter 0 true 5 1700000000000000
    kill -SEGV $$ ;;
sigkill)
    kill -KILL $$ ;;
exit1)
    echo "Traceback (most recent call last):" >&2
    echo "RuntimeError: boom in the model" >&2
    exit 1 ;;
error)
    echo '{"type":"error","message":"unknown torchvision model fakenet"}'
    exit 2 ;;
hang)
    iter 0 true 5 1700000000000000
    sleep 60 &
    [ -n "$FAKE_PIDFILE" ] && echo $! > "$FAKE_PIDFILE"
    wait
    exit 0 ;;
malformed)
    iter 0 true 5 1700000000000000
    echo '{"type":"iter","index":1,"warmup":false,"ms":5,'
    exit 0 ;;
noise)
    echo 'epoch 1: loss 6.9'
    exit 0 ;;
truncated)
    iter 0 true 5 1700000000000000
    printf '{"type":"iter","index":1,"warmup":false'
    exit 0 ;;
nonmono)
    iter 0 true 5 1700000000000500
    iter 1 false 5 1700000000000400
    exit 0 ;;
nan)
    iter 0 true NaN 1700000000000000
    exit 0 ;;
huge)
    head -c 70000 /dev/zero | tr '\0' 'x'
    echo
    exit 0 ;;
nofooter)
    iter 0 true 5 1700000000000000
    exit 0 ;;
canary|canary_slow)
    # The host-phase canary (only when the agent asks for it): warm-up, then
    # three timed iterations "ms:canary_ms". Mode canary: run 1 has one slow
    # iteration of three, run 2 two (mostly slow), run 3 none; canary_slow:
    # every run two of three.
    case $mode/$run in
    canary/1) its="10:1.0 40:2.0 12:1.1" ;;
    canary/3) its="10:1.0 10:1.0 10:1.0" ;;
    *) its="40:2.0 40:2.0 10:1.0" ;;
    esac
    at=$((1700000000000000 + run * 1000000))
    i=0
    for x in 5:1.0 $its; do
        warm=false
        [ $i -eq 0 ] && warm=true
        at=$((at + 1000))
        if [ "$TRAINCAST_TRACE_CANARY" = 1 ]; then
            printf '{"type":"iter","index":%s,"warmup":%s,"ms":%s,"at_us":%s,"canary_ms":%s}\n' \
                $i $warm "${x%%:*}" $at "${x#*:}"
        else
            iter $i $warm "${x%%:*}" $at
        fi
        i=$((i + 1))
    done
    echo '{"type":"footer","peak_memory_bytes":1}'
    exit 0 ;;
esac

# ok, mismatch and lingering: every iteration, then a footer.
i=0
at=$((1700000000000000 + run * 1000000))
while [ $i -lt $((W + N)) ]; do
    warm=false
    [ $i -lt "$W" ] && warm=true
    at=$((at + 1000))
    iter $i $warm $((10 * run)) $at
    i=$((i + 1))
done
printf '{"type":"footer","peak_memory_bytes":%s,"op_times_ms":{"conv":1.5,"bn":0.25}}\n' \
    $((1000 * run))
if [ "$mode" = lingering ]; then
    # Exit, leaving a process that holds stdout open.
    sleep 60 &
    [ -n "$FAKE_PIDFILE" ] && echo $! > "$FAKE_PIDFILE"
fi
exit 0
