#!/usr/bin/env bash
# fleet_netns.sh AGENT AGGREGATOR PG_DIR
#
# A small fleet on one machine, the hosts separated by network namespaces:
#
#   root namespace                          namespace ...-a1       namespace ...-a2
#   aggregator serve  (tcp://10.X.Y.1) ---- agent (10.X.Y.2) ---- agent (10.X.Y.3)
#   PostgreSQL (127.0.0.1, the ctest          cpu, 1 thread          cpu, 2 threads
#   fixture)           bridge + veth pairs
#
# The aggregator stays in the root namespace, where the test PostgreSQL
# listens on 127.0.0.1; each agent reaches it only over its veth link, with
# CURVE keys generated and allowlisted as docs/operator-guide.md says, and
# with config files made from deploy/config/*.conf. The cycle: both agents
# `agent run` three CNNs at the same time in their namespaces (conv
# benchmarks + training traces, sent as they are measured); the aggregator
# fits a model per device; both agents then `agent serve`; predict for a
# fourth CNN, never benchmarked or traced, queues its convs as jobs, the
# serving agents measure them, and predict compares the two devices; a
# pg_dump taken meanwhile restores into a database that predicts the same;
# SIGTERM stops every process cleanly. Exit 77 (skipped) when network
# namespaces cannot be created here.
#
# Small on purpose: 32-pixel inputs, batches 2 and 4, few iterations.
set -euo pipefail

agent=$1
aggregator=$2
pg_dir=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
id=$$
traced=squeezenet1_1,shufflenet_v2_x0_5,resnet18
held_out=mnasnet0_5
size=32
batches=2,4

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $(date +%T) $*"; }
started=$(date +%s)

[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (ip netns add); run as root to test a fleet across namespaces"
command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is not installed"
[ -f "$pg_dir/dsn" ] || fail "no test PostgreSQL in $pg_dir: run with ctest (fixture pg_start)"
psql=$(command -v psql || printf '%s\n' /usr/lib/postgresql/*/bin/psql | sort -V | tail -n 1)
[ -x "$psql" ] || fail "psql not found; install the Debian package postgresql-client"

# Namespaces of earlier runs that were killed before their cleanup ran.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tcfleet-[0-9]+-a[12]$' || true); do
    pid=${ns#tcfleet-}
    pid=${pid%-a*}
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
done
for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^tcf[0-9]+br$' || true); do
    pid=${br#tcf}
    kill -0 "${pid%br}" 2>/dev/null || ip link del "$br" 2>/dev/null || true
done

work=$(mktemp -d)
ns1=tcfleet-$id-a1
ns2=tcfleet-$id-a2
bridge=tcf${id}br
pids=()
namespaces=()
db=""
admin_dsn=$(head -n 1 "$pg_dir/dsn")

cleanup() {
    local rc=$?
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    ip link del "$bridge" 2>/dev/null || true
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        for log in "$work"/*.log; do
            [ -f "$log" ] || continue
            echo "---- $(basename "$log") (last 30 lines)" >&2
            tail -n 30 "$log" >&2
        done
    fi
    for d in $db ${db:+${db}_restored}; do
        "$psql" -X -q "$admin_dsn" -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "network: a bridge in the root namespace, one namespace per agent"
ip netns add "$ns1" 2>"$work/netns.err" || skip "cannot create a network namespace here: $(cat "$work/netns.err")"
namespaces+=("$ns1")
ip netns add "$ns2"
namespaces+=("$ns2")
ip link add "$bridge" type bridge 2>"$work/bridge.err" || skip "cannot create a bridge here: $(cat "$work/bridge.err")"
# A /24 of 10/8 that no route of this machine covers.
net=""
for _ in $(seq 1 50); do
    cand=10.$((200 + RANDOM % 50)).$((RANDOM % 256))
    if [ -z "$(ip -4 route show to match "$cand.1" | grep -v '^default' || true)" ]; then
        net=$cand
        break
    fi
done
[ -n "$net" ] || fail "no free 10.x.y.0/24 for the test network"
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
n=1
for ns in "$ns1" "$ns2"; do
    host_if=tcf${id}h$n
    ns_if=tcf${id}n$n
    ip link add "$host_if" type veth peer name "$ns_if"
    ip link set "$host_if" master "$bridge"
    ip link set "$host_if" up
    ip link set "$ns_if" netns "$ns"
    ip -n "$ns" addr add "$net.$((n + 1))/24" dev "$ns_if"
    ip -n "$ns" link set "$ns_if" up
    ip -n "$ns" link set lo up
    n=$((n + 1))
done
# The agents' namespaces reach the aggregator's address and nothing else.
for ns in "$ns1" "$ns2"; do
    ip netns exec "$ns" ip -4 route show | grep "^$net.0/24" >/dev/null || fail "$ns has no route to $net.0/24"
    if ip netns exec "$ns" ip -4 route show | grep "^default" >/dev/null; then fail "$ns has a default route"; fi
done
echo "network $net.0/24: aggregator $net.1 ($bridge), agents $net.2 ($ns1), $net.3 ($ns2)"

step "database: a fresh one on the test PostgreSQL"
db=t_fleet_netns_$id
"$psql" -X -q "$admin_dsn" -c "CREATE DATABASE $db" >/dev/null
dsn=${admin_dsn%/*}/$db
"$aggregator" migrate --db "$dsn"

step "keys: the aggregator's, one per agent, the agents allowlisted"
keys=$work/aggregator
"$aggregator" keygen --keys "$keys" >/dev/null
for n in 1 2; do
    state=$work/agent-$n
    "$agent" keygen --state "$state" >/dev/null
    cat "$state/agent.pub" >>"$keys/allowlist"
done
cp "$keys/aggregator.pub" "$work/aggregator.pub"
[ "$(grep -vc '^#' "$keys/allowlist")" -eq 2 ] || fail "the allowlist should hold two keys: $(cat "$keys/allowlist")"

step "aggregator serve on $net.1, config from deploy/config/aggregator.conf"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=tcp://$net.1:$port
sed -e "s#^listen = .*#listen = $endpoint#" -e "s#^db = .*#db = $dsn#" -e "s#^keys = .*#keys = $keys#" \
    -e "s#^workers = .*#workers = 2#" "$repo/deploy/config/aggregator.conf" >"$work/aggregator.conf"
"$aggregator" serve --config "$work/aggregator.conf" --check-config
"$aggregator" serve --config "$work/aggregator.conf" >"$work/aggregator.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 100); do
    grep -q "listening on $endpoint" "$work/aggregator.log" && break
    kill -0 "$serve_pid" 2>/dev/null || fail "aggregator serve exited: $(cat "$work/aggregator.log")"
    sleep 0.1
done
grep -q "listening on $endpoint" "$work/aggregator.log" || fail "aggregator serve is not listening on $endpoint"
grep -q "2 agent keys allowed" "$work/aggregator.log" || fail "the aggregator did not load both keys: $(cat "$work/aggregator.log")"

# Agent N's config: deploy/config/agent.conf pointed at this aggregator.
for n in 1 2; do
    sed -e "s#^aggregator = .*#aggregator = $endpoint#" \
        -e "s#^server-key = .*#server-key = $work/aggregator.pub#" \
        -e "s#^device = .*#device = cpu#" "$repo/deploy/config/agent.conf" >"$work/agent-$n.conf"
    printf 'state = %s\nthreads = %s\nbudget-ms = 20\nmax-reps = 5\n' "$work/agent-$n" "$n" \
        >>"$work/agent-$n.conf"
    "$agent" serve --config "$work/agent-$n.conf" --check-config
done

step "agents: agent run in their namespaces, at once: $traced at $size px, batches $batches"
# Each benchmarks every conv of the CNNs, traces their training, and sends as it goes.
run_pids=()
for n in 1 2; do
    ns=$ns1
    [ "$n" -eq 2 ] && ns=$ns2
    ip netns exec "$ns" "$agent" run --config "$work/agent-$n.conf" --models "$traced" \
        --batches "$batches" --input-size "$size" --warmup 1 --iters 3 --repeats 1 \
        >"$work/run-$n.log" 2>&1 &
    pids+=("$!")
    run_pids+=("$!")
done
rc1=0; wait "${run_pids[0]}" || rc1=$?
rc2=0; wait "${run_pids[1]}" || rc2=$?
[ "$rc1" -eq 0 ] || fail "agent run in $ns1 exited $rc1"
[ "$rc2" -eq 0 ] || fail "agent run in $ns2 exited $rc2"
for n in 1 2; do
    grep "^results:" "$work/run-$n.log"
    grep -qE '^results: [1-9][0-9]* stored, 0 already stored, 0 rejected, 0 still waiting' "$work/run-$n.log" \
        || fail "agent $n did not deliver everything"
done

q() { "$psql" -X -q -tA -F ' | ' "$dsn" -c "$1"; }
step "stored: per device"
q "SELECT name, conv_results, traces FROM device_overview ORDER BY name"
[ "$(q "SELECT count(*) FROM device_overview WHERE conv_results > 0 AND traces = 6")" -eq 2 ] \
    || fail "both devices should have conv results and 6 traces each"
[ "$(q "SELECT count(DISTINCT agent_id) FROM received_messages")" -eq 2 ] \
    || fail "the messages should come from two agents"

step "aggregator fit"
# Non-negative coefficients: three small CNNs measured side by side on two
# busy cores are too few for an unconstrained fit to extrapolate sensibly.
"$aggregator" fit --db "$dsn" --forms nnls >"$work/fit.log" 2>&1 || fail "fit failed: $(cat "$work/fit.log")"
grep -E "stored as fit" "$work/fit.log"
[ "$(grep -c "stored as fit" "$work/fit.log")" -eq 2 ] || fail "fit should store one fit per device"

step "agents serve in their namespaces"
serve_pids=()
for n in 1 2; do
    ns=$ns1
    [ "$n" -eq 2 ] && ns=$ns2
    ip netns exec "$ns" "$agent" serve --config "$work/agent-$n.conf" >"$work/serve-$n.log" 2>&1 &
    pids+=("$!")
    serve_pids+=("$!")
done
online=0
for _ in $(seq 1 100); do
    online=$(q "SELECT count(DISTINCT agent_id) FROM devices_online")
    [ "$online" -eq 2 ] && break
    sleep 0.2
done
[ "$online" -eq 2 ] || fail "both serving agents should be online (devices_online: $online)"
"$aggregator" status --db "$dsn"
# Seen from the aggregator's side: one connection from each namespace's address.
peers=$(ss -Htn state established "( sport = :$port )" | awk '{print $4}' | sed 's/:[0-9]*$//' | sort -u | tr '\n' ' ')
echo "connections to $endpoint from: $peers"
[ "$peers" = "$net.2 $net.3 " ] || fail "the agents should connect from $net.2 and $net.3, not: $peers"

step "aggregator predict --gpu all for $held_out (never benchmarked, never traced)"
rc=0
"$aggregator" predict --db "$dsn" --gpu all --model "torchvision:$held_out" --input-size "$size" \
    --batch "$batches" --wait 0 --format csv >"$work/predict-nowait.csv" 2>&1 || rc=$?
if [ "$rc" -ne 3 ] || [ "$(grep -c ',missing_benchmarks,' "$work/predict-nowait.csv")" -ne 4 ]; then
    fail "without asking the agents, both devices should lack benchmarks at both batches (exit $rc, want 3): $(cat "$work/predict-nowait.csv")"
fi
"$aggregator" predict --db "$dsn" --gpu all --model "torchvision:$held_out" --input-size "$size" \
    --batch "$batches" --wait 300 --format csv --plot "$work/predict.svg" >"$work/predict.csv" 2>"$work/predict.log" \
    || fail "predict failed: $(cat "$work/predict.log" "$work/predict.csv")"
cat "$work/predict.csv"
ok_rows=$(grep -c "^\"torchvision:$held_out@$size\",\"[^\"]*\",\"[^\"]*\",ok," "$work/predict.csv" || true)
[ "$ok_rows" -eq 4 ] || fail "predict should give 4 rows with status ok (2 devices x 2 batches), got $ok_rows"
# model, device, alias, status, batch, iteration_ms, lo_ms, hi_ms, conv_ms, ...
bad=$(awk -F, '$4 == "ok" && !($6 > 0 && $9 > 0)' "$work/predict.csv")
[ -z "$bad" ] || fail "predicted iteration and conv times must be positive: $bad"
if [ "$(grep -c '(1 thread)' "$work/predict.csv")" -ne 2 ] || [ "$(grep -c '(2 threads)' "$work/predict.csv")" -ne 2 ]; then
    fail "predict should cover both devices"
fi
q "SELECT kind, device, state, agent_id, done, total FROM job_overview ORDER BY device, created_at"
[ "$(q "SELECT count(*) FROM jobs WHERE state <> 'done'")" -eq 0 ] || fail "every job should be done"
[ "$(q "SELECT count(DISTINCT agent_id) FROM jobs WHERE kind = 'bench' AND state = 'done'")" -eq 2 ] \
    || fail "both serving agents should have measured jobs"
grep -q "<svg" "$work/predict.svg" || fail "no plot written"

step "backup while serving (pg_dump), restore into a new database (pg_restore), predict there"
pgbin=$(dirname "$psql")
"$pgbin/pg_dump" --format=custom --file "$work/traincast.dump" "$dsn"
"$psql" -X -q "$admin_dsn" -c "CREATE DATABASE ${db}_restored" >/dev/null
restored=${admin_dsn%/*}/${db}_restored
"$pgbin/pg_restore" --no-owner --exit-on-error --dbname "$restored" "$work/traincast.dump"
"$aggregator" migrate --db "$restored" 2>&1 | tee "$work/migrate-restored.log"
grep -q "schema is up to date" "$work/migrate-restored.log" \
    || fail "migrate on the restored database should have nothing to apply"
"$aggregator" predict --db "$restored" --gpu all --model "torchvision:$held_out" --input-size "$size" \
    --batch "$batches" --wait 0 --format csv >"$work/predict-restored.csv" 2>>"$work/predict.log" \
    || fail "predict on the restored database failed: $(cat "$work/predict.log")"
cmp -s "$work/predict.csv" "$work/predict-restored.csv" \
    || fail "the restored database predicts differently: $(diff "$work/predict.csv" "$work/predict-restored.csv")"
echo "the restored database gives the same predictions"

step "SIGTERM: the agents and the aggregator stop cleanly"
for p in "${serve_pids[@]}" "$serve_pid"; do
    kill -TERM "$p"
    rc=0; wait "$p" || rc=$?
    [ "$rc" -eq 0 ] || fail "process $p exited $rc after SIGTERM"
done
pids=()
grep -q "stopped" "$work/aggregator.log" || fail "the aggregator did not log its stop"

step "done in $(( $(date +%s) - started )) s"
