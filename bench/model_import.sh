#!/usr/bin/env bash
# Import time per model: `agent model describe --format json` on every
# committed export in tests/data, REPEAT times each (default 5), reporting the
# median and minimum wall time of the whole command (process start, read,
# scan, unpack, inference, JSON) in milliseconds, as a Markdown table.
#
#   bench/model_import.sh [BUILD_DIR] [REPEAT] > docs/reports/model-import-time.md
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
build=${1:-$root/build}
repeat=${2:-5}
agent=$build/agent/agent
[ -x "$agent" ] || { echo "no agent binary at $agent; build first" >&2; exit 2; }
now_ns() { date +%s%N; }
echo "# Model import time"
echo
echo "\`bench/model_import.sh\` on $(bench_host_load), $(date -u +%Y-%m-%d), $repeat runs per model."
echo "Times are wall-clock milliseconds for the whole \`agent model describe --format json\`"
echo "command, process start included; the machine is shared, so treat them as an upper bound."
echo
echo "| model | file bytes | ONNX nodes | layers | median ms | min ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
total=0
for f in "$root"/tests/data/*.onnx; do
  name=$(basename "$f" .onnx)
  times=""
  i=0
  while [ $i -lt "$repeat" ]; do
    t0=$(now_ns)
    "$agent" model describe "$f" --format json > /tmp/tc_bench_$$.json
    t1=$(now_ns)
    times="$times $(( (t1 - t0) / 1000 ))"
    i=$((i + 1))
  done
  nodes=$(grep -o '"onnx_nodes":[0-9]*' /tmp/tc_bench_$$.json | cut -d: -f2)
  layers=$(grep -o '"total_layers":[0-9]*' /tmp/tc_bench_$$.json | cut -d: -f2)
  sorted=$(echo $times | tr ' ' '\n' | sort -n)
  median=$(echo "$sorted" | sed -n "$(( (repeat + 1) / 2 ))p")
  min=$(echo "$sorted" | head -1)
  printf '| %s | %s | %s | %s | %d.%02d | %d.%02d |\n' "$name" "$(wc -c < "$f")" "$nodes" \
    "$layers" $((median / 1000)) $((median % 1000 / 10)) $((min / 1000)) $((min % 1000 / 10))
done
rm -f /tmp/tc_bench_$$.json
