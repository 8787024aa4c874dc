#!/usr/bin/env bash
# test_bench_tools.sh BUILD_DIR
#
# The helpers of the benchmark suite, without running any benchmark:
#   - tc-gen-predict-db writes exactly the conv configs and results the
#     planner counts for the CNN set (the predict benchmark's database);
#   - tc-plot-accuracy draws a chart from points, counts predictions <= 0
#     that a log axis cannot show, and refuses bad input with exit 2;
#   - deploy/bench.sh lists its benchmarks and refuses unknown ones;
#   - bench/load.sh prints its header with --help and refuses bad options.
set -uo pipefail

build=${1:?usage: test_bench_tools.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

gen=$build/bench/tc-gen-predict-db
plotter=$build/bench/tc-plot-accuracy
agent=$build/agent/agent
convs=$repo/tests/data/cnn_set.convs

# Generator against the planner: configs, and results = items x batches x devices.
read -r items configs < <("$agent" bench --convs "$convs" --batches 8 --dry-run \
    | sed -n -E 's/^plan: .* -> ([0-9]+) unique items \(([0-9]+) configs.*/\1 \2/p')
n=$("$gen" --table configs --convs "$convs" | wc -l)
[ "$n" -eq "$configs" ] && ok "configs: $n" || fail "generator wrote $n configs, the planner counts $configs"
n=$("$gen" --table results --convs "$convs" --devices 3 --batches 8,16 | wc -l)
[ "$n" -eq $((items * 2 * 3)) ] && ok "results: $n" || fail "generator wrote $n results, want $((items * 2 * 3))"
"$gen" --table results --convs "$convs" --devices 2 --batches 8 --rounds 2 \
    | awk -F'\t' '{ print $3, $4, $5, $6 }' | sort | uniq -c >"$tmp/rounds.txt"
n=$(awk '$1 == 2' "$tmp/rounds.txt" | wc -l)
bad=$(awk '$1 != 2' "$tmp/rounds.txt" | wc -l)
[ "$n" -eq $((items * 2)) ] && [ "$bad" -eq 0 ] && ok "every item once per round" \
    || fail "$n items measured twice (want $((items * 2))), $bad not"
"$gen" --table devices --devices 10 | awk -F'\t' '{ print $4 }' | sort -u | wc -l | grep -qx 10 \
    && ok "10 device names" || fail "devices are not 10 distinct names"
out=$("$gen" --traces --db postgresql://unused --models-dir "$repo/tests/data" --trace-batches 999 2>&1)
[ $? -eq 2 ] && grep -q '999 is not in --batches' <<<"$out" && ok "trace batch outside --batches refused" \
    || fail "trace batch outside --batches: $out"

# Plot helper.
printf 'Dev A\tresnet18\t8\t100\t95\nDev A\tvgg11\t8\t50\t-3\n# comment\nDev B\tresnet18\t8\t80\t88\n' >"$tmp/points.tsv"
if "$plotter" --in "$tmp/points.tsv" --out "$tmp/chart.svg" --title "test chart"; then
    grep -q '<svg' "$tmp/chart.svg" && ok "chart written" || fail "no SVG in $tmp/chart.svg"
else
    fail "tc-plot-accuracy failed on good input"
fi
printf 'Dev A\tresnet18\t8\tnot-a-number\t95\n' >"$tmp/bad.tsv"
out=$("$plotter" --in "$tmp/bad.tsv" --out "$tmp/bad.svg" 2>&1)
[ $? -eq 2 ] && grep -q 'bad.tsv:1:' <<<"$out" && ok "bad points refused naming the line" || fail "bad points: $out"
out=$("$plotter" --in "$tmp/points.tsv" --out "$tmp/chart.pdf" 2>&1)
[ $? -eq 2 ] && grep -q 'must end in .svg or .png' <<<"$out" && ok "unknown chart format refused" || fail "chart.pdf: $out"

# deploy/bench.sh without running anything.
n=$("$repo/deploy/bench.sh" --list --build-dir "$build" | wc -l)
[ "$n" -eq 12 ] && ok "bench.sh --list: $n benchmarks" || fail "bench.sh --list printed $n lines"
out=$("$repo/deploy/bench.sh" --only nosuch --build-dir "$build" 2>&1)
[ $? -eq 2 ] && grep -q "unknown benchmark 'nosuch'" <<<"$out" && ok "unknown benchmark refused" || fail "--only nosuch: $out"

# bench/load.sh without running it.
out=$(TRAINCAST_BUILD_DIR=$build "$repo/bench/load.sh" --help)
grep -q -- '--agents N' <<<"$out" && grep -q 'nothing lost\|Nothing lost\|lost or duplicated' <<<"$out" \
    && ok "load.sh --help prints its header" || fail "load.sh --help: $out"
out=$(TRAINCAST_BUILD_DIR=$build "$repo/bench/load.sh" --agents 0 2>&1)
[ $? -eq 2 ] && grep -q -- '--agents must be a positive integer' <<<"$out" && ok "load.sh --agents 0 refused" \
    || fail "load.sh --agents 0: $out"
out=$(TRAINCAST_BUILD_DIR=$build "$repo/bench/load.sh" --nosuch 2>&1)
[ $? -eq 2 ] && grep -q "unknown option '--nosuch'" <<<"$out" && ok "load.sh unknown option refused" \
    || fail "load.sh --nosuch: $out"

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
