#!/usr/bin/env bash
# bench/transport.sh [--messages N] [--per-message K] [--rounds R] [--serve "ARGS;ARGS..."]
#                    [--out FILE]
#
# End-to-end throughput of conv results, agent -> ZeroMQ (CURVE) -> aggregator
# -> PostgreSQL, against a raw COPY of the same rows into the same database.
#
# Each round, for every aggregator configuration given with --serve (default:
# the defaults, then --batch 1 to show what batching buys):
#   A  `agent push` of a fresh result file of N ConvResults messages of K
#      results each (default 256, as `agent bench` sends a fast stream):
#      journaling, sending, storing and acknowledging, timed from start to
#      exit (the exit comes after the last acknowledgement, so after the
#      last commit);
#   B  the rows that A stored (conv_results and conv_algo_timings), exported
#      beforehand, loaded with one COPY each in one transaction into copies
#      of the two tables with the same columns, indexes and constraints
#      (the reference checks of conv results aside: neither foreign keys nor
#      their triggers), timed the same way: once in COPY's text format (the
#      yardstick, "raw COPY"), once in its binary format (what the
#      aggregator sends for these two tables) into a second pair of copies.
# Rounds interleave A and B (A B A B ...) so that drift of a shared machine
# hits both; the ratio is taken per round, and the median reported.
# Each round also counts the CPU time the machine spent on A and on B (all
# processes: user, system and interrupts, from /proc/stat), and for A how
# much of it the agent, the aggregator and the aggregator's database
# backends used: on a machine with few CPUs, end to end is bound by its
# CPU time, the raw COPY (one backend) by one CPU.
#
# Needs a build (build/ or $TRAINCAST_BUILD_DIR). Uses its own throwaway
# PostgreSQL cluster under the build directory; nothing else is touched.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
build=${TRAINCAST_BUILD_DIR:-$repo/build}
messages=80
per_message=256
rounds=3
serve_configs="default;--batch 1"
out=$repo/docs/reports/ingest-throughput.md

while [ $# -gt 0 ]; do
    case "$1" in
    --messages) messages=$2; shift 2 ;;
    --per-message) per_message=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --serve) serve_configs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench/transport.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

agent=$build/agent/agent
aggregator=$build/aggregator/aggregator
gen=$build/bench/tc-gen-results
for b in "$agent" "$aggregator" "$gen"; do
    [ -x "$b" ] || { echo "bench/transport.sh: $b is missing; build first (deploy/setup.sh)" >&2; exit 2; }
done
bench_require_time

work=$build/bench-transport
pgdir=$work/pg
rm -rf "$work/run"
mkdir -p "$work/run"
run=$work/run
server_pid=

cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$repo/deploy/pg-local.sh" stop "$pgdir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR] = $1} END {print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
log() { echo "transport bench: $*" >&2; }
hz=$(getconf CLK_TCK)
# CPU seconds the machine has spent working (user, nice, system, irq,
# softirq of all CPUs; not idle, I/O wait or time stolen by the host).
cpu_used() { awk -v hz="$hz" '/^cpu / {printf "%.2f\n", ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat; }
# CPU seconds (user + system) used so far by the processes PID...
pid_cpu() {
    local p v t=0
    for p in "$@"; do
        # after the ") " that ends the command name: utime and stime are the 12th and 13th
        # fields (nothing when the process has gone meanwhile)
        v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')
        t=$((t + ${v:-0}))
    done
    awk -v t="$t" -v hz="$hz" 'BEGIN {printf "%.2f\n", t / hz}'
}

admin=$("$repo/deploy/pg-local.sh" start "$pgdir" | tail -n 1)
db=bench_transport
psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
dsn=${admin%/*}/$db
"$aggregator" migrate --db "$dsn" >/dev/null
psql -X -q "$dsn" <<'SQL'
CREATE TABLE bench_copy_results (LIKE conv_results INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
CREATE TABLE bench_copy_timings (LIKE conv_algo_timings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
CREATE TABLE bench_bin_results (LIKE conv_results INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
CREATE TABLE bench_bin_timings (LIKE conv_algo_timings INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
SQL

"$aggregator" keygen --keys "$run/keys" >/dev/null
"$agent" keygen --state "$run/agent" >/dev/null
cat "$run/agent/agent.pub" >>"$run/keys/allowlist"
cp "$run/keys/aggregator.pub" "$run/agent/"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
endpoint=tcp://127.0.0.1:$port

start_server() { # ARGS...
    local args=()
    [ "$1" = default ] || read -r -a args <<<"$1"
    "$aggregator" serve --listen "$endpoint" --db "$dsn" --keys "$run/keys" "${args[@]}" \
        >>"$run/aggregator.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on $endpoint" "$run/aggregator.log" 2>/dev/null && return 0
        sleep 0.1
    done
    log "the aggregator did not start (log $run/aggregator.log)"; exit 1
}
stop_server() {
    kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=
    : >"$run/aggregator.log"
}

IFS=';' read -r -a configs <<<"$serve_configs"
total=$((messages * per_message))
results=$run/results.tsv
: >"$results"
cols="message_id, seq, device_id, config_id, batch, direction, policy, backend, algo, algo_id,
      median_ms, min_ms, max_ms, stddev_ms, repetitions, workspace_bytes, measured_at,
      samples_ms, sample_offsets_us"
load_before=$(bench_loadavg)

for r in $(seq "$rounds"); do
    for c in "${!configs[@]}"; do
        cfg=${configs[$c]}
        uuid=bench-r$r-c$c
        file=$run/results-$uuid.bin
        "$gen" --out "$file" --messages "$messages" --results "$per_message" --agent bench \
            --device bench-cpu --uuid "$uuid"
        start_server "$cfg"
        c0=$(cpu_used)
        t0=$(now)
        /usr/bin/time -f '%U %S' -o "$run/agent.time" \
            "$agent" push --aggregator "$endpoint" --state "$run/agent" --timeout 0 "$file" \
            >>"$run/push.log" 2>&1
        t1=$(now)
        c1=$(cpu_used)
        agent_cpu=$(awk '{printf "%.2f", $1 + $2}' "$run/agent.time")
        server_cpu=$(pid_cpu "$server_pid")
        # The aggregator's connections (their backends end with it).
        mapfile -t backends < <(pgrep -f "^postgres: [^ ]+ $db " || true)
        db_cpu=$(pid_cpu "${backends[@]}")
        stop_server
        stored=$(psql -X -tA "$dsn" -c "SELECT count(*) FROM conv_results r JOIN devices d USING (device_id) WHERE d.uuid = '$uuid'")
        [ "$stored" = "$total" ] || { log "round $r: stored $stored of $total"; exit 1; }
        e2e=$(echo "$t1 - $t0" | bc -l)

        # B: the same rows, raw COPY (exported first, untimed).
        psql -X -q "$dsn" -c "\\copy (SELECT $cols FROM conv_results WHERE device_id = (SELECT device_id FROM devices WHERE uuid = '$uuid')) TO '$run/rows.copy'"
        psql -X -q "$dsn" -c "\\copy (SELECT t.* FROM conv_algo_timings t JOIN conv_results r USING (result_id) JOIN devices d USING (device_id) WHERE d.uuid = '$uuid') TO '$run/timings.copy'"
        psql -X -q "$dsn" -c "\\copy (SELECT $cols FROM conv_results WHERE device_id = (SELECT device_id FROM devices WHERE uuid = '$uuid')) TO '$run/rows.bin' WITH (FORMAT binary)"
        psql -X -q "$dsn" -c "\\copy (SELECT t.* FROM conv_algo_timings t JOIN conv_results r USING (result_id) JOIN devices d USING (device_id) WHERE d.uuid = '$uuid') TO '$run/timings.bin' WITH (FORMAT binary)"
        k0=$(cpu_used)
        t0=$(now)
        psql -X -q -1 "$dsn" -c "\\copy bench_copy_results ($cols) FROM '$run/rows.copy'" \
            -c "\\copy bench_copy_timings FROM '$run/timings.copy'"
        t1=$(now)
        k1=$(cpu_used)
        copy=$(echo "$t1 - $t0" | bc -l)
        t0=$(now)
        psql -X -q -1 "$dsn" -c "\\copy bench_bin_results ($cols) FROM '$run/rows.bin' WITH (FORMAT binary)" \
            -c "\\copy bench_bin_timings FROM '$run/timings.bin' WITH (FORMAT binary)"
        t1=$(now)
        copy_bin=$(echo "$t1 - $t0" | bc -l)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$cfg" "$total" "$e2e" "$copy" \
            "$(echo "$c1 - $c0" | bc -l)" "$agent_cpu" "$server_cpu" "$db_cpu" \
            "$(echo "$k1 - $k0" | bc -l)" "$copy_bin" >>"$results"
        log "round $r, aggregator '$cfg': end to end $(printf %.2f "$e2e") s, COPY $(printf %.3f "$copy") s, binary COPY $(printf %.3f "$copy_bin") s"
        rm -f "$file"
    done
done
load_after=$(bench_loadavg)

# Report.
pgver=$(psql -X -tA "$dsn" -c "SHOW server_version")
{
    echo "# Transport benchmark"
    echo
    echo "Written by \`bench/transport.sh\` (run it to replace this file). End-to-end conv results stored"
    echo "per second through agent -> ZeroMQ (CURVE) -> aggregator -> PostgreSQL, against a raw COPY of"
    echo "the same rows into the same database, interleaved A B A B in one run; each round's ratio is"
    echo "COPY rate / end-to-end rate. $per_message conv results per message (\`agent bench\` sends up to"
    echo "256 per message, or what it measured within 0.5 s). The raw COPY is in COPY's text format;"
    echo "the same rows by binary COPY (the format the aggregator sends conv results in) are the last"
    echo "columns."
    echo
    echo "## Machine"
    echo
    echo "- $(bench_machine_line "$run")"
    echo "- PostgreSQL $pgver (deploy/pg-local.sh defaults: fsync and synchronous_commit on)"
    echo "- load average before: $load_before; after: $load_after (a shared machine: expect noise)"
    echo "- $messages messages of $per_message results ($total results) per round, $rounds rounds"
    echo
    echo "## Rounds"
    echo
    echo "| round | aggregator options | end to end (s) | results/s | COPY (s) | results/s | ratio | CPU s end to end (agent / aggregator / its database backends) | CPU s COPY | binary COPY (s) | ratio to it |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %.2f | %.0f | %.3f | %.0f | %.1f | %.2f (%.2f / %.2f / %.2f) | %.2f | %.3f | %.1f |\n", $1, $2, $4, $3/$4, $5, $3/$5, $4/$5, $6, $7, $8, $9, $10, $11, $4/$11}' "$results"
    echo
    echo "## Medians"
    echo
    echo "| aggregator options | end to end results/s | COPY results/s | COPY / end to end | binary COPY results/s | binary COPY / end to end |"
    echo "|---|---|---|---|---|---|"
    for c in "${configs[@]}"; do
        e=$(awk -F'\t' -v c="$c" '$2 == c {print $3 / $4}' "$results" | median)
        k=$(awk -F'\t' -v c="$c" '$2 == c {print $3 / $5}' "$results" | median)
        q=$(awk -F'\t' -v c="$c" '$2 == c {print $4 / $5}' "$results" | median)
        kb=$(awk -F'\t' -v c="$c" '$2 == c {print $3 / $11}' "$results" | median)
        qb=$(awk -F'\t' -v c="$c" '$2 == c {print $4 / $11}' "$results" | median)
        printf '| %s | %.0f | %.0f | %.1f | %.0f | %.1f |\n' "$c" "$e" "$k" "$q" "$kb" "$qb"
    done
    echo
    echo "## CPU time"
    echo
    echo "CPU seconds the machine spent per 10 000 results stored (medians of the rounds), and how busy"
    echo "its $(nproc) CPUs were while it ran (CPU time / (wall time x CPUs)):"
    echo
    echo "| aggregator options | end to end | of it agent | aggregator | database backends | COPY | end to end / COPY | CPUs busy, end to end | CPUs busy, COPY |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for c in "${configs[@]}"; do
        col() { awk -F'\t' -v c="$c" -v f="$1" '$2 == c {print $f * 10000 / $3}' "$results" | median; }
        busy() { awk -F'\t' -v c="$c" -v f="$1" -v w="$2" -v n="$(nproc)" '$2 == c {print 100 * $f / ($w * n)}' "$results" | median; }
        q=$(awk -F'\t' -v c="$c" '$2 == c && $10 > 0 {print $6 / $10}' "$results" | median)
        printf '| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.0f %% | %.0f %% |\n' "$c" "$(col 6)" \
            "$(col 7)" "$(col 8)" "$(col 9)" "$(col 10)" "${q:-0}" "$(busy 6 4)" "$(busy 10 5)"
    done
} >"$out"
log "wrote $out"
cat "$out"
