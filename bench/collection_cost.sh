#!/usr/bin/env bash
# bench/collection_cost.sh [--batch B] [--models LIST] [--rounds R] [--budget-ms MS]
#                          [--max-reps N] [--threads N] [--out FILE] [--work DIR]
#
# What deduplication saves when benchmarking the convs of a set of CNNs at one
# batch size, and how many conv configs per second an agent covers.
#
# 1. Counts for the whole CNN set (tests/data/cnn_set.convs, exact, from the
#    planner: `agent bench --dry-run`): layer passes (every conv layer by
#    itself), items when each model is planned alone (dedup within a model),
#    items when the set is planned together (dedup across models).
# 2. A direct A/B on a subset (default resnet18,resnet34,resnet50, whose
#    ratio of the two item counts is close to the whole set's), on the cpu
#    device, interleaved A B A B for R rounds (default 2):
#      A  one `agent bench` over the subset, deduplicated across the models;
#      B  one `agent bench` per model, each into its own fresh result file.
#    Same budget and repetition cap in both (defaults 50 ms, 10), so the
#    ratio of wall times B / A is what deduplication saves; A's items and
#    distinct configs per second are the collection rate.
# Writes a Markdown report to --out (default BUILD_DIR/bench-out/collection.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
batch=8
models=resnet18,resnet34,resnet50
rounds=2
budget=50
max_reps=10
threads=0
convs=$repo/tests/data/cnn_set.convs
out=$build/bench-out/collection.md
work=$build/bench-collection

while [ $# -gt 0 ]; do
    case "$1" in
    --batch) batch=$2; shift ;;
    --models) models=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --budget-ms) budget=$2; shift ;;
    --max-reps) max_reps=$2; shift ;;
    --threads) threads=$2; shift ;;
    --convs) convs=$2; shift ;;
    --out) out=$2; shift ;;
    --work) work=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "collection_cost: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

agent=$build/agent/agent
[ -x "$agent" ] || { echo "collection_cost: $agent is missing; build first (cmake -S . -B build && cmake --build build)" >&2; exit 2; }
log() { echo "collection_cost: $*" >&2; }
rm -rf "$work"
mkdir -p "$work/split" "$(dirname "$out")"

# One conv list per model.
awk -v dir="$work/split" '/^model / { name = $2; sub(/^torchvision:/, "", name); f = dir "/" name ".convs" } f { print > f }' "$convs"

# plan FILES -> "layers passes items configs"
plan() {
    "$agent" bench --convs "$1" --batches "$batch" --threads "$threads" --dry-run | sed -n -E \
        's/^plan: [0-9]+ models?, ([0-9]+) conv layers, [0-9]+ batch sizes?: ([0-9]+) layer passes -> ([0-9]+) unique items \(([0-9]+) configs.*/\1 \2 \3 \4/p'
}

read -r set_layers set_passes set_items set_configs < <(plan "$convs")
n_models=$(grep -c '^model ' "$convs")
per_model_items=0
per_model_configs=0
for f in "$work"/split/*.convs; do
    read -r _ _ items configs < <(plan "$f")
    per_model_items=$((per_model_items + items))
    per_model_configs=$((per_model_configs + configs))
done
log "whole set: $set_passes layer passes, $per_model_items items planned per model, $set_items planned together"

# The A/B on the subset.
IFS=, read -r -a subset <<<"$models"
subset_files=()
for m in "${subset[@]}"; do
    [ -s "$work/split/$m.convs" ] || { log "model '$m' is not in $convs"; exit 2; }
    subset_files+=("$work/split/$m.convs")
done
subset_list=$(IFS=,; echo "${subset_files[*]}")
read -r sub_layers sub_passes sub_items sub_configs < <(plan "$subset_list")
sub_sep=0
for f in "${subset_files[@]}"; do
    read -r _ _ items _ < <(plan "$f")
    sub_sep=$((sub_sep + items))
done

bench_args=(--batches "$batch" --device cpu --threads "$threads" --budget-ms "$budget" --max-reps "$max_reps")
times=$work/times.tsv
: >"$times"
for r in $(seq "$rounds"); do
    rm -f "$work"/a-*.tcr "$work"/b-*.tcr
    t0=$(bench_now)
    "$agent" bench --convs "$subset_list" "${bench_args[@]}" --out "$work/a-$r.tcr" >"$work/a-$r.out" 2>"$work/a-$r.err" \
        || { tail -n 20 "$work/a-$r.err" >&2; log "agent bench (A) failed"; exit 1; }
    t1=$(bench_now)
    for f in "${subset_files[@]}"; do
        "$agent" bench --convs "$f" "${bench_args[@]}" --out "$work/b-$r-$(basename "$f" .convs).tcr" \
            >>"$work/b-$r.out" 2>>"$work/b-$r.err" \
            || { tail -n 20 "$work/b-$r.err" >&2; log "agent bench (B, $f) failed"; exit 1; }
    done
    t2=$(bench_now)
    a=$(echo "$t1 - $t0" | bc -l)
    b=$(echo "$t2 - $t1" | bc -l)
    printf '%s\t%s\t%s\n' "$r" "$a" "$b" >>"$times"
    log "round $r: A (together) $(printf %.1f "$a") s, B (per model) $(printf %.1f "$b") s"
done
ratio=$(awk -F'\t' '{ print $3 / $2 }' "$times" | bench_median)
a_med=$(cut -f2 "$times" | bench_median)
b_med=$(cut -f3 "$times" | bench_median)

{
    echo "## Counts for the whole CNN set at batch $batch (exact, from the planner)"
    echo
    echo "| plan | items to measure | relative to the set planned together |"
    echo "|---|---:|---:|"
    printf '| every conv layer by itself (%s layers, 2 or 3 passes each) | %s | %.2f |\n' "$set_layers" "$set_passes" "$(echo "$set_passes / $set_items" | bc -l)"
    printf '| each of the %s models planned alone (dedup within a model) | %s | %.2f |\n' "$n_models" "$per_model_items" "$(echo "$per_model_items / $set_items" | bc -l)"
    printf '| the set planned together (dedup across models; %s distinct configs) | %s | 1.00 |\n' "$set_configs" "$set_items"
    echo
    echo "## Measured A/B: $models at batch $batch on the cpu device"
    echo
    echo "\`agent bench ${bench_args[*]}\`; A: one run over the $((${#subset[@]})) models"
    echo "($sub_items items, $sub_configs distinct configs), B: one run per model into its own file ($sub_sep items"
    echo "in all; planner ratio $(printf %.2f "$(echo "$sub_sep / $sub_items" | bc -l)")). $rounds rounds, A B A B."
    echo
    echo "| round | A: together (s) | B: per model (s) | B / A |"
    echo "|---:|---:|---:|---:|"
    awk -F'\t' '{ printf "| %s | %.1f | %.1f | %.2f |\n", $1, $2, $3, $3 / $2 }' "$times"
    echo
    printf 'Median B / A: **%.2f**. Collection rate in A (median round): **%.2f conv configs/s**, %.2f items/s.\n' \
        "$ratio" "$(echo "$sub_configs / $a_med" | bc -l)" "$(echo "$sub_items / $a_med" | bc -l)"
    printf 'At that rate the whole set at batch %s takes about %.0f s planned together and %.0f s\n' \
        "$batch" "$(echo "$set_items * $a_med / $sub_items" | bc -l)" "$(echo "$per_model_items * $a_med / $sub_items" | bc -l)"
    echo "model by model (items x the subset's mean time per item; items of other models differ in size)."
    echo
    echo "(median B round $(printf %.1f "$b_med") s.)"
} >"$out"
log "wrote $out"
cat "$out"
