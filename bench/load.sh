#!/usr/bin/env bash
# bench/load.sh [--agents N] [--results M] [--quick] [--out FILE] [--work DIR]
#
# Many agents at once through one aggregator: N agents (default 20), each
# with its own state directory and CURVE key (all allowlisted), each pushing
# a result file of M conv results (default 500; one result per message, as
# `agent bench` writes them) to one `aggregator serve` with its default
# options. All N `agent push` processes are started together.
#
# Reports (Markdown, --out; default docs/reports/aggregator-load.md):
#   - results/s end to end: from the first message sent by any agent to the
#     last acknowledgement received by any agent;
#   - ack latency per message, from its first send to its acknowledgement
#     (p50, p90, p99, max), taken from each agent's ack log
#     (TRAINCAST_ACK_LOG, docs/transport.md), overall and per agent;
#   - peak resident memory (VmHWM) of the aggregator, read from /proc just
#     before it is stopped, and of each agent (GNU time);
#   - that nothing was lost or duplicated: conv_results rows = N x M, as many
#     distinct message ids, each device with M rows, nothing left waiting,
#     nothing rejected, every push exited 0, one ack per message;
#   - per store worker (the aggregator queues an agent's messages on one
#     worker, chosen by a hash of the agent id): its agents and last ack;
#   - CPU time of the agents, the aggregator and PostgreSQL;
#   - warnings and errors in the aggregator's log; the machine and its load
#     average before, during and after.
# Exit status 1 when a check failed (the report says which).
#
#   --quick      a smoke run: 4 agents x 50 results
#   --work DIR   scratch directory (default BUILD/bench-load)
#
# Needs a build (build/ or $TRAINCAST_BUILD_DIR). Uses its own throwaway
# PostgreSQL cluster in the work directory; nothing else is touched.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${TRAINCAST_BUILD_DIR:-$repo/build}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
agents=20
results=500
out=$repo/docs/reports/aggregator-load.md
work=$build/bench-load

while [ $# -gt 0 ]; do
    case "$1" in
    --agents) agents=$2; shift ;;
    --results) results=$2; shift ;;
    --quick) agents=4; results=50 ;;
    --out) out=$2; shift ;;
    --work) work=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/load.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in agents results; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench/load.sh: --$v must be a positive integer (got '${!v}')" >&2; exit 2; }
done
case "$out" in /*) ;; *) out=$PWD/$out ;; esac

agent=$build/agent/agent
aggregator=$build/aggregator/aggregator
gen=$build/bench/tc-gen-results
for b in "$agent" "$aggregator" "$gen"; do
    [ -x "$b" ] || { echo "bench/load.sh: $b is missing; build first (deploy/setup.sh)" >&2; exit 2; }
done
bench_require_time
log() { echo "load bench: $*" >&2; }

run=$work/run
pgdir=$work/pg
rm -rf "$run"
mkdir -p "$run" "$(dirname "$out")"
server_pid=
push_pids=()
cleanup() {
    bench_monitor_stop >/dev/null 2>&1 || true
    for p in "${push_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$repo/deploy/pg-local.sh" stop "$pgdir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

admin=$("$repo/deploy/pg-local.sh" start "$pgdir" | tail -n 1)
db=bench_load
psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
dsn=${admin%/*}/$db
"$aggregator" migrate --db "$dsn" >"$run/migrate.log" 2>&1 || { log "migrate failed (log $run/migrate.log)"; exit 1; }
"$aggregator" keygen --keys "$run/keys" >/dev/null
sql() { psql -X -tA "$dsn" -c "$1"; }

# CPU seconds used so far by the PostgreSQL cluster: the postmaster with the
# children it has reaped, plus its live children (the aggregator's backends).
hz=$(getconf CLK_TCK)
pg_cpu() {
    local pm
    pm=$(head -n 1 "$(readlink -f "$pgdir/data")/postmaster.pid")
    { awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pm/stat"
      for c in $(ps -o pid= --ppid "$pm"); do
          awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$c/stat" 2>/dev/null || true
      done; } | awk -v hz="$hz" '{ t += $1 } END { printf "%.1f", t / hz }'
}

# Agents: a01 ... aNN, each with its own state, key and result file; the
# envelopes carry the agent's own id and device load-aNN.
names=()
for i in $(seq "$agents"); do
    a=$(printf 'a%02d' "$i")
    names+=("$a")
    mkdir -p "$run/$a"
    "$agent" keygen --state "$run/$a/state" >/dev/null
    cat "$run/$a/state/agent.pub" >>"$run/keys/allowlist"
    cp "$run/keys/aggregator.pub" "$run/$a/state/"
    "$gen" --out "$run/$a/results.bin" --messages "$results" \
        --agent "$(cat "$run/$a/state/agent_id")" --device "load-$a" --uuid "load-$a"
done
total=$((agents * results))

endpoint=tcp://127.0.0.1:$(bench_free_port)
"$aggregator" serve --listen "$endpoint" --db "$dsn" --keys "$run/keys" >"$run/aggregator.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    grep -q "listening on $endpoint" "$run/aggregator.log" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { log "the aggregator exited (log $run/aggregator.log)"; exit 1; }
    sleep 0.1
done
grep -q "listening on $endpoint" "$run/aggregator.log" || { log "the aggregator did not start (log $run/aggregator.log)"; exit 1; }

log "$agents agents x $results results through one aggregator"
load_before=$(bench_loadavg)
bench_monitor_start "$run/load.samples"
pg_cpu0=$(pg_cpu)
t0=$(bench_now)
for a in "${names[@]}"; do
    TRAINCAST_ACK_LOG=$run/$a/acks.tsv /usr/bin/time -f '%M %e %U %S' -o "$run/$a/time" \
        "$agent" push --aggregator "$endpoint" --state "$run/$a/state" --timeout 1800 \
        "$run/$a/results.bin" >"$run/$a/push.log" 2>&1 &
    push_pids+=($!)
done
declare -A push_status
for k in "${!names[@]}"; do
    st=0
    wait "${push_pids[$k]}" || st=$?
    push_status[${names[$k]}]=$st
done
push_pids=()
t1=$(bench_now)
pg_cpu1=$(pg_cpu)
load_during=$(bench_monitor_stop)
load_after=$(bench_loadavg)

# The aggregator: peak memory and CPU time, then a clean stop.
agg_hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$server_pid/status")
agg_cpu=$(awk -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%.1f", ($12 + $13) / hz }' "/proc/$server_pid/stat")
kill -TERM "$server_pid"
agg_exit=0
wait "$server_pid" || agg_exit=$?
server_pid=

# Checks.
checks=$run/checks.md
: >"$checks"
failed=0
check() { # WHAT GOT WANT
    if [ "$2" = "$3" ]; then
        echo "| $1 | $2 | ok |" >>"$checks"
    else
        echo "| $1 | $2 | **FAILED**: want $3 |" >>"$checks"
        failed=$((failed + 1))
        log "check failed: $1: $2, want $3"
    fi
}
check "conv_results rows" "$(sql "SELECT count(*) FROM conv_results")" "$total"
check "distinct message ids in conv_results" "$(sql "SELECT count(DISTINCT message_id) FROM conv_results")" "$total"
check "received_messages (conv_results)" "$(sql "SELECT count(*) FROM received_messages WHERE kind = 'conv_results'")" "$total"
check "devices with exactly $results rows" \
    "$(sql "SELECT count(*) FROM (SELECT device_id FROM conv_results GROUP BY device_id HAVING count(*) = $results) d")" "$agents"
waiting=0 rejected=0 bad_exit=0
for a in "${names[@]}"; do
    # agent status --format csv: the agent table (its 5th column: waiting),
    # a blank line, then the refused table (a header and one row each).
    st=$("$agent" status --state "$run/$a/state" --format csv)
    waiting=$((waiting + $(echo "$st" | awk -F, 'NR == 2 { print $5 }')))
    rejected=$((rejected + $(echo "$st" | awk '/^message_id,/ { t = 1; next } t && NF { n++ } END { print n + 0 }')))
    [ "${push_status[$a]}" -eq 0 ] || bad_exit=$((bad_exit + 1))
done
check "messages left waiting in the agents' journals" "$waiting" 0
check "messages refused" "$rejected" 0
check "\`agent push\` exits other than 0" "$bad_exit" 0
: >"$run/acks.tsv"
for a in "${names[@]}"; do
    if [ -f "$run/$a/acks.tsv" ]; then cat "$run/$a/acks.tsv" >>"$run/acks.tsv"; else log "$a wrote no ack log"; fi
done
check "acks \`stored\` in the ack logs" "$(awk '$6 == "stored"' "$run/acks.tsv" | wc -l)" "$total"
check "distinct message ids in the ack logs" "$(cut -f1 "$run/acks.tsv" | sort -u | wc -l)" "$total"
check "aggregator exit status after SIGTERM" "$agg_exit" 0

# Figures. Ack log columns: id, sent_us, acked_us, latency_us, sends, outcome.
# pct P: nearest-rank percentile of sorted numbers on stdin.
pct() { awk -v p="$1" '{ a[NR] = $1 } END { if (!NR) { print "nan"; exit } r = p * NR; i = int(r); if (i < r) i++; if (i < 1) i = 1; print a[i] }'; }
ms() { awk '{ printf "%.1f", $1 / 1000 }'; }
cut -f4 "$run/acks.tsv" | sort -n >"$run/latency.us"
lat_p50=$(pct 0.50 <"$run/latency.us" | ms)
lat_p90=$(pct 0.90 <"$run/latency.us" | ms)
lat_p99=$(pct 0.99 <"$run/latency.us" | ms)
lat_max=$(tail -n 1 "$run/latency.us" | ms)
lat_mean=$(awk '{ s += $1 } END { printf "%.1f", NR ? s / NR / 1000 : 0 }' "$run/latency.us")
# colmin / colmax COLUMN FILE (integers; awk, not sort | head, which
# pipefail turns into a SIGPIPE failure).
colmin() { awk -F'\t' -v c="$1" 'NR == 1 || $c < m { m = $c } END { printf "%.0f", m }' "$2"; }
colmax() { awk -F'\t' -v c="$1" 'NR == 1 || $c > m { m = $c } END { printf "%.0f", m }' "$2"; }
first_us=$(colmin 2 "$run/acks.tsv")
last_us=$(colmax 3 "$run/acks.tsv")
span=$(awk -v a="$first_us" -v b="$last_us" 'BEGIN { printf "%.2f", (b - a) / 1e6 }')
rate=$(awk -v n="$total" -v s="$span" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
resent=$(awk '$5 > 1' "$run/acks.tsv" | wc -l)
sends=$(awk '{ s += $5 } END { print s + 0 }' "$run/acks.tsv")
window=32
workers=4
pg_cpu_run=$(awk -v a="$pg_cpu0" -v b="$pg_cpu1" 'BEGIN { printf "%.1f", b - a }')
agents_cpu=$(for a in "${names[@]}"; do tail -n 1 "$run/$a/time"; done | awk '{ t += $3 + $4 } END { printf "%.1f", t }')
capacity=$(awk -v w="$wall" -v n="$(nproc)" 'BEGIN { printf "%.1f", w * n }')
stats_line=$(grep 'stored [0-9]* message' "$run/aggregator.log" | tail -n 1 | sed 's/^.*info: //')
n_warn=$(grep -c ' warn: ' "$run/aggregator.log" || true)
n_error=$(grep -c ' error: ' "$run/aggregator.log" || true)
agent_warn=0
for a in "${names[@]}"; do
    agent_warn=$((agent_warn + $(grep -c ' warn: \| error: ' "$run/$a/push.log" || true)))
done

# The store worker of each agent: aggregator/serve/server_workers.c queues an
# agent's messages on worker FNV-1a(agent id) mod --workers (default 4).
declare -A worker_of
while read -r a w; do worker_of[$a]=$w; done < <(
    for a in "${names[@]}"; do echo "$a $(cat "$run/$a/state/agent_id")"; done | "$bench_python" -c '
import sys
for line in sys.stdin:
    name, agent_id = line.split()
    h = 2166136261
    for c in agent_id.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    print(name, h % '"$workers"')')

# Per agent: store worker, first send and last ack (s after the first send
# of all), results/s over its own span, window / that rate (ms), latency
# p50 / p99, resends, peak RSS, wall.
per=$run/agents.tsv
: >"$per"
for a in "${names[@]}"; do
    f=$run/$a/acks.tsv
    [ -s "$f" ] || { printf '%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$a" "${worker_of[$a]}" "${push_status[$a]}" >>"$per"; continue; }
    read -r rss el _ < <(tail -n 1 "$run/$a/time")
    s0=$(colmin 2 "$f")
    s1=$(colmax 3 "$f")
    p50=$(cut -f4 "$f" | sort -n | pct 0.50 | ms)
    p99=$(cut -f4 "$f" | sort -n | pct 0.99 | ms)
    rs=$(awk '$5 > 1' "$f" | wc -l)
    awk -v a="$a" -v wk="${worker_of[$a]}" -v f0="$first_us" -v s0="$s0" -v s1="$s1" -v n="$(wc -l <"$f")" \
        -v win="$window" -v p50="$p50" -v p99="$p99" -v rs="$rs" -v rss="$rss" -v el="$el" -v st="${push_status[$a]}" \
        'BEGIN { r = n / ((s1 - s0) / 1e6)
                 printf "%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\t%s\t%s\t%s\t%.1f\t%.2f\t%s\n", a, wk, (s0 - f0) / 1e6,
                 (s1 - f0) / 1e6, r, 1000 * win / r, p50, p99, rs, rss / 1024, el, st }' >>"$per"
done
col() { cut -f"$1" "$per" | grep -v '^-$'; }
agent_rss_max=$(col 10 | bench_max)
agent_rss_med=$(col 10 | bench_median)
agent_rate_min=$(col 5 | bench_min)
agent_rate_max=$(col 5 | bench_max)
agent_last_min=$(col 4 | bench_min)
agent_last_max=$(col 4 | bench_max)

# Per store worker: its agents, when its last one was acknowledged, its
# results/s from the first send of all.
per_worker=$run/workers.tsv
awk -F'\t' -v m="$results" -v w="$workers" '
    $4 != "-" { n[$2]++; if ($4 > last[$2]) last[$2] = $4 }
    END { for (i = 0; i < w; i++)
              printf "%d\t%d\t%s\t%s\n", i, n[i], n[i] ? sprintf("%.2f", last[i]) : "-",
                     n[i] ? sprintf("%.0f", n[i] * m / last[i]) : "-" }' "$per" >"$per_worker"
worker_agents=$(cut -f2 "$per_worker" | paste -sd /)
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# Report.
pgver=$(sql "SHOW server_version" | cut -d' ' -f1)
{
    echo "# Load benchmark"
    echo
    echo "Written by \`bench/load.sh\` (run it to replace this file; \`--help\` says what it does)."
    echo "$agents agents, each with its own state directory and CURVE key (all allowlisted), each pushing"
    echo "$results conv results (one per message, as \`agent bench\` writes them) at once through one"
    echo "\`aggregator serve\` with its default options (4 store workers, up to 32 messages per"
    echo "transaction) into PostgreSQL. Each agent keeps up to $window messages in flight (\`--window\`"
    echo "default). Latencies come from the agents' ack logs (\`TRAINCAST_ACK_LOG\`): from a message's"
    echo "first send to its acknowledgement, which the aggregator sends after the commit."
    echo
    echo "## Machine"
    echo
    echo "- $(bench_machine_line "$run")"
    echo "- PostgreSQL $pgver (deploy/pg-local.sh defaults: fsync and synchronous_commit on), on the"
    echo "  same machine as the aggregator and all $agents agents; glibc malloc, untuned"
    echo "- load average (1, 5, 15 min) before: $load_before; after: $load_after"
    echo "- while the agents ran: $load_during"
    echo "- a shared machine: other work ran beside this benchmark, so absolute rates and latencies"
    echo "  move from run to run; the load average above says how busy it was"
    echo
    echo "## Results"
    echo
    echo "| figure | value |"
    echo "|---|---|"
    echo "| results stored | $total ($agents agents x $results) |"
    echo "| end to end, first send to last ack | $span s |"
    echo "| **results/s end to end** | **$rate** |"
    echo "| wall time, all pushes started to all exited (journaling included) | $wall s |"
    echo "| ack latency p50 / p90 / p99 / max | $lat_p50 / $lat_p90 / **$lat_p99** / $lat_max ms |"
    echo "| ack latency mean | $lat_mean ms |"
    echo "| messages sent more than once (ack timeout 10 s) | $resent (sends in all: $sends) |"
    echo "| per agent: results/s over its own span, min to max | $agent_rate_min to $agent_rate_max |"
    echo "| per agent: last ack, s after the first send, earliest to latest | $agent_last_min to $agent_last_max |"
    echo "| **peak RSS, aggregator** (VmHWM) | **$(mib "$agg_hwm") MiB** |"
    echo "| **peak RSS, one agent** (\`agent push\`, max of $agents; median) | **$agent_rss_max MiB**; $agent_rss_med MiB |"
    echo "| CPU time (user + system): $agents agents; aggregator; PostgreSQL | $agents_cpu s; $agg_cpu s; $pg_cpu_run s |"
    echo "| CPU time available, wall x $(nproc) CPUs | $capacity s (the rest: idle, or other work on the machine) |"
    echo "| agents per store worker (0/1/2/3) | $worker_agents |"
    echo "| aggregator's last count | $stats_line |"
    echo "| aggregator log: warnings, errors | $n_warn, $n_error |"
    echo "| agents' logs: warnings and errors | $agent_warn |"
    echo
    echo "Latency is mostly queueing: every agent keeps $window messages unacknowledged, so a message"
    echo "waits behind the ones sent before it, and an agent's median latency is close to $window divided"
    echo "by its own rate (the column \"$window / rate\" below), not the cost of storing one message."
    echo
    echo "## Store workers"
    echo
    echo "The aggregator stores an agent's messages on its own worker (FNV-1a hash of the agent id modulo"
    echo "--workers, aggregator/serve/server_workers.c); only conv results waiting there spill to an idle"
    echo "worker, so a worker that drew more agents still tends to finish later, and the last ack of all"
    echo "comes from the busiest worker."
    echo
    echo "| worker | agents | last ack (s after the first send) | results/s |"
    echo "|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$per_worker"
    echo
    echo "## Nothing lost, nothing duplicated"
    echo
    echo "| check | got | |"
    echo "|---|---|---|"
    cat "$checks"
    if [ "$n_warn" -gt 0 ] || [ "$n_error" -gt 0 ]; then
        echo
        echo "Warnings and errors in the aggregator's log (message ids and numbers replaced, counted):"
        echo
        echo '```'
        grep ' warn: \| error: ' "$run/aggregator.log" | sed -E 's/^[0-9:.]+ //; s/[0-9A-Z]{26}/<id>/g; s/[0-9]+/N/g' \
            | sort | uniq -c | sort -rn | awk 'NR <= 10'
        echo '```'
    fi
    echo
    echo "## Per agent"
    echo
    echo "Times in seconds after the first send of all agents; latencies in ms; RSS of \`agent push\`;"
    echo "wall time of the push including putting its file in the journal."
    echo
    echo "| agent | worker | first send | last ack | results/s | $window / rate | p50 | p99 | resent | peak RSS (MiB) | wall (s) | exit |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$per"
} >"$out"
log "$rate results/s end to end, ack p50 $lat_p50 ms, p99 $lat_p99 ms; aggregator $(mib "$agg_hwm") MiB, agent $agent_rss_max MiB"
log "wrote $out"
if [ "$failed" -gt 0 ]; then
    log "$failed check(s) failed; logs in $run"
    exit 1
fi
