#!/usr/bin/env bash
# bench/memory.sh [--messages N] [--model NAME] [--batches "B1 B2"] [--out FILE] [--work DIR]
#
# Peak resident memory (VmHWM / ru_maxrss) of
#   - `aggregator serve` while it ingests conv results: a fresh server per
#     case, fed by `agent push` with N and 4N one-result messages (as `agent
#     bench` writes them) and with N/10 messages of 100 results each; the
#     server's VmHWM is read from /proc just before it is stopped;
#   - `agent push` sending those files;
#   - `agent bench` measuring every conv of one CNN (default resnet50, from
#     tests/data/cnn_set.convs, 224 px) on the cpu device at two batch sizes,
#     next to the largest tensors a single conv of that CNN needs.
# Ratios between the cases show what memory grows with (message count,
# message size, batch) on the same machine in one run.
# Writes a Markdown report to --out (default BUILD_DIR/bench-out/memory.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
messages=2000
model=resnet50
batches="8 32"
out=$build/bench-out/memory.md
work=$build/bench-memory

while [ $# -gt 0 ]; do
    case "$1" in
    --messages) messages=$2; shift ;;
    --model) model=$2; shift ;;
    --batches) batches=$2; shift ;;
    --out) out=$2; shift ;;
    --work) work=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "memory: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

agent=$build/agent/agent
aggregator=$build/aggregator/aggregator
gen=$build/bench/tc-gen-results
for b in "$agent" "$aggregator" "$gen"; do
    [ -x "$b" ] || { echo "memory: $b is missing; build first (cmake -S . -B build && cmake --build build)" >&2; exit 2; }
done
bench_require_time
log() { echo "memory: $*" >&2; }

rm -rf "$work/run"
mkdir -p "$work/run" "$(dirname "$out")"
run=$work/run
pgdir=$work/pg
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$repo/deploy/pg-local.sh" stop "$pgdir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

admin=$("$repo/deploy/pg-local.sh" start "$pgdir" | tail -n 1)
psql -X -q "$admin" -c "DROP DATABASE IF EXISTS bench_memory" -c "CREATE DATABASE bench_memory" >/dev/null
dsn=${admin%/*}/bench_memory
"$aggregator" migrate --db "$dsn" >/dev/null
"$aggregator" keygen --keys "$run/keys" >/dev/null
"$agent" keygen --state "$run/agent" >/dev/null
cat "$run/agent/agent.pub" >>"$run/keys/allowlist"
cp "$run/keys/aggregator.pub" "$run/agent/"
endpoint=tcp://127.0.0.1:$(bench_free_port)

kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

rows=$run/rows.tsv
: >"$rows"
# ingest_case LABEL MESSAGES RESULTS_PER_MESSAGE
ingest_case() {
    local label=$1 n=$2 per=$3 file=$run/in-$1.bin uuid=mem-$1
    "$gen" --out "$file" --messages "$n" --results "$per" --agent bench --device bench-cpu --uuid "$uuid"
    "$aggregator" serve --listen "$endpoint" --db "$dsn" --keys "$run/keys" >"$run/serve-$label.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$run/serve-$label.log" 2>/dev/null && break
        sleep 0.1
    done
    local idle
    idle=$(kib "$server_pid")
    BENCH_PEAK_RSS_FILE=$run/push-$label.rss bench_peak_rss_kb \
        "$agent" push --aggregator "$endpoint" --state "$run/agent" --timeout 0 "$file" >>"$run/push.log" 2>&1
    local peak
    peak=$(kib "$server_pid")
    kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=
    local stored
    stored=$(psql -X -tA "$dsn" -c "SELECT count(*) FROM conv_results r JOIN devices d USING (device_id) WHERE d.uuid = '$uuid'")
    [ "$stored" = "$((n * per))" ] || { log "$label: stored $stored of $((n * per)) results"; exit 1; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$n" "$per" "$(stat -c %s "$file")" "$idle" "$peak" \
        "$(tail -n 1 "$run/push-$label.rss")" >>"$rows"
    log "$label: $n messages x $per results: aggregator $(mib "$idle") MiB idle, $(mib "$peak") MiB peak"
    rm -f "$file"
}

ingest_case small "$messages" 1
ingest_case large "$((4 * messages))" 1
ingest_case wide "$((messages / 10))" 100

# The agent benchmarking one CNN's convs.
awk -v m="torchvision:$model" '/^model / { on = ($2 == m) } on' "$repo/tests/data/cnn_set.convs" >"$run/model.convs"
[ -s "$run/model.convs" ] || { log "no model torchvision:$model in tests/data/cnn_set.convs"; exit 2; }
bench_rows=$run/bench.tsv
: >"$bench_rows"
for b in $batches; do
    # The largest input + output + weights of one conv of the model at this batch (fp32).
    biggest=$(awk -v n="$b" '!/^(model|#)/ && NF >= 13 {
        c = $1; h = $2; w = $3; k = $4; r = $5; s = $6; ph = $7; pw = $8; sh = $9; sw = $10; dh = $11; dw = $12; g = $13
        oh = int((h + 2 * ph - dh * (r - 1) - 1) / sh) + 1; ow = int((w + 2 * pw - dw * (s - 1) - 1) / sw) + 1
        bytes = 4 * (n * c * h * w + n * k * oh * ow + k * c / g * r * s)
        if (bytes > max) max = bytes
    } END { printf "%.0f", max / 1024 }' "$run/model.convs")
    BENCH_PEAK_RSS_FILE=$run/bench-$b.rss bench_peak_rss_kb \
        "$agent" bench --convs "$run/model.convs" --batches "$b" --device cpu --budget-ms 30 --max-reps 5 \
        --out "$run/bench-$b.tcr" >"$run/bench-$b.out" 2>&1 \
        || { tail -n 20 "$run/bench-$b.out" >&2; log "agent bench failed at batch $b"; exit 1; }
    items=$(sed -n 's/^measured \([0-9]*\) items.*/\1/p' "$run/bench-$b.out")
    printf '%s\t%s\t%s\t%s\n' "$b" "$items" "$biggest" "$(tail -n 1 "$run/bench-$b.rss")" >>"$bench_rows"
    log "agent bench $model batch $b: $(mib "$(tail -n 1 "$run/bench-$b.rss")") MiB peak"
done

# The same at the first batch with glibc's dynamic mmap threshold off: freed
# large blocks go back to the system at once instead of staying in the heap.
b=${batches%% *}
BENCH_PEAK_RSS_FILE=$run/bench-fixed.rss MALLOC_MMAP_THRESHOLD_=131072 bench_peak_rss_kb \
    "$agent" bench --convs "$run/model.convs" --batches "$b" --device cpu --budget-ms 30 --max-reps 5 \
    --out "$run/bench-fixed.tcr" >"$run/bench-fixed.out" 2>&1 \
    || { tail -n 20 "$run/bench-fixed.out" >&2; log "agent bench failed (fixed mmap threshold)"; exit 1; }
fixed_rss=$(tail -n 1 "$run/bench-fixed.rss")
log "agent bench $model batch $b, MALLOC_MMAP_THRESHOLD_=131072: $(mib "$fixed_rss") MiB peak"

{
    echo "Peak resident set size (VmHWM of the aggregator, read before it stops; ru_maxrss of"
    echo "the agent commands, from GNU time). PostgreSQL's own memory is not included."
    echo
    echo "| ingest case | messages | results per message | result file | aggregator idle (MiB) | aggregator peak (MiB) | agent push peak (MiB) |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '{ printf "| %s | %d | %d | %.1f MiB | %.1f | %.1f | %.1f |\n", $1, $2, $3, $4 / 1048576, $5 / 1024, $6 / 1024, $7 / 1024 }' "$rows"
    echo
    awk -F'\t' '$1 == "small" { s = $6 } $1 == "large" { l = $6 } END {
        printf "Aggregator peak with 4 times the messages / with the first count: **%.2f**.\n", l / s }' "$rows"
    echo
    echo "| agent bench | batch | items | largest conv tensors (MiB) | agent peak (MiB) |"
    echo "|---|---:|---:|---:|---:|"
    awk -F'\t' -v m="$model" '{ printf "| %s | %s | %s | %.1f | %.1f |\n", m, $1, $2, $3 / 1024, $4 / 1024 }' "$bench_rows"
    awk -F'\t' -v m="$model" -v b="$b" -v f="$fixed_rss" 'NR == 1 { printf "| %s, MALLOC_MMAP_THRESHOLD_=131072 | %s | %s | %.1f | %.1f |\n", m, b, $2, $3 / 1024, f / 1024; exit }' "$bench_rows"
    echo
    echo "(largest conv tensors: input + output + weights of the single largest conv, fp32; the"
    echo "backend also holds oneDNN's blocked copies, gradients and a scratchpad for the item it"
    echo "measures.) With glibc's default, the mmap threshold rises after large blocks are freed, so"
    echo "later tensors come from the heap and stay resident between items; a fixed threshold keeps"
    awk -F'\t' -v f="$fixed_rss" 'NR == 1 { printf "the peak near one item'"'"'s needs: default / fixed = **%.1f** at batch %s.\n", $4 / f, $1; exit }' "$bench_rows"
} >"$out"
log "wrote $out"
cat "$out"
