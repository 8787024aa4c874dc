#!/usr/bin/env bash
# bench/sql_latency.sh [--runs N] [--devices N] [--out FILE] [--work DIR] [--fresh]
#
# Latency of the SQL people run on a fleet's database, and how it grows with
# the data: every query of README.md's "Analysis in SQL" section as written,
# every view of the schema read whole (`SELECT count(v.*) FROM view v`:
# every column computed, none sent), and `aggregator status` (its "stored"
# table counts every result table).
#
# The databases are the predict latency benchmark's (bench_fleet_dbs in
# bench/lib.sh, in the same work directory, so either benchmark generates
# them for both): A holds 1.29 million conv results (10 synthetic GPUs, the
# CNN set's configs at 70 batch sizes) and the matmul results of the models
# exported in tests/data, B the same at 10 batch sizes (0.19 million conv
# results); both hold the same traces, fits and, added here once, the
# predictions of `aggregator predict --gpu all` of a traced CNN, an untraced
# one, convnext_tiny and vit_b_16. Each query runs once untimed on each, then N times each (default 5),
# interleaved A B A B, through psql with its output discarded; the time
# includes psql's start and connection, reported apart as `SELECT 1`.
#
# The report gives per query its rows on A, the medians, and the median of
# the per-run ratios A / B next to the ratio of conv results (6.7): a query
# that reads every result grows about as the data, one at 1 reads what both
# databases share (traces, fits, devices), and one well above the data's
# ratio grows faster than the data (the first form of measurement_load,
# schema/018_canary.sql, was quadratic; 019 replaced it).
#
# Writes a Markdown report to --out (default: BUILD_DIR/bench-out/sql.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
runs=5
devices=10
out=$build/bench-out/sql.md
work=$build/bench-predict
fresh=0

while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift ;;
    --devices) devices=$2; shift ;;
    --out) out=$2; shift ;;
    --work) work=$2; shift ;;
    --fresh) fresh=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "sql_latency: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "sql_latency: --runs must be a positive whole number (got '$runs')" >&2; exit 2; }

aggregator=$build/aggregator/aggregator
for b in "$aggregator" "$build/bench/tc-gen-predict-db"; do
    [ -x "$b" ] || { echo "sql_latency: $b is missing; build first (cmake -S . -B build && cmake --build build)" >&2; exit 2; }
done
log() { echo "sql_latency: $*" >&2; }

mkdir -p "$work" "$(dirname "$out")"
pgdir=$work/pg
trap '"$repo/deploy/pg-local.sh" stop "$pgdir" >/dev/null 2>&1 || true' EXIT
admin=$("$repo/deploy/pg-local.sh" start "$pgdir" | tail -n 1)
base=${admin%/*}
dbs=("$bench_fleet_large" "$bench_fleet_small")
bench_fleet_dbs "$build" "$admin" "$devices" "$fresh" "$work"

# Predictions, once per database: resnet18 is traced there, resnet50,
# convnext_tiny and vit_b_16 (matmuls benchmarked beside their convs) are not.
for db in "${dbs[@]}"; do
    if [ "$(psql -X -tA "$base/$db" -c "SELECT count(*) FROM predictions")" -eq 0 ]; then
        for m in resnet18 resnet50 convnext_tiny vit_b_16; do
            rc=0
            TRAINCAST_LOG=warn "$aggregator" predict --db "$base/$db" --gpu all --model "$repo/tests/data/$m.onnx" \
                --batch 8,16,32,64 --extrapolate 0 --wait 0 --format csv >/dev/null 2>"$work/sql-predict.err" || rc=$?
            [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { cat "$work/sql-predict.err" >&2; log "aggregator predict failed on $db"; exit 1; }
        done
    fi
done

# The statements: qdir/NN.sql, with "NN<TAB>kind<TAB>label" in qdir/list.tsv.
qdir=$work/sql-queries
rm -rf "$qdir"
mkdir -p "$qdir"
awk -v dir="$qdir" '
    /^## Analysis in SQL/ { in_section = 1; next }
    in_section && /^## / { exit }
    in_section && /^```sql$/ { in_block = 1; stmt = ""; next }
    in_block && /^```$/ { in_block = 0; next }
    in_block && stmt == "" && /^[ \t]*$/ { next }
    in_block {
        stmt = stmt $0 "\n"
        if ($0 ~ /;[ \t]*$/) {
            n++
            file = sprintf("%s/%02d.sql", dir, n)
            printf "%s", stmt > file; close(file)
            # the label: the first relation after FROM
            one = stmt; gsub(/\n/, " ", one); rel = "?"
            if (match(one, / FROM [a-z_]+/)) rel = substr(one, RSTART + 6, RLENGTH - 6)
            seen[rel]++
            printf "%02d\tREADME query\t%s%s\n", n, rel, (seen[rel] > 1 ? " (" seen[rel] ")" : "") >> (dir "/list.tsv")
            stmt = ""
        }
    }' "$repo/README.md"
nreadme=$(wc -l <"$qdir/list.tsv")
[ "$nreadme" -ge 5 ] || { log "found only $nreadme queries in README.md's Analysis in SQL section"; exit 1; }
n=$nreadme
for v in $(psql -X -tA "$base/${dbs[0]}" -c "SELECT table_name FROM information_schema.views WHERE table_schema = current_schema() ORDER BY 1"); do
    n=$((n + 1))
    # count(v.*) needs every column (count(*) would let the planner drop the
    # columns it does not read, and their work)
    printf 'SELECT count(v.*) FROM %s v;\n' "$v" >"$qdir/$(printf %02d "$n").sql"
    printf '%02d\tview, whole\t%s\n' "$n" "$v" >>"$qdir/list.tsv"
done
n=$((n + 1))
printf 'SELECT 1;\n' >"$qdir/$(printf %02d "$n").sql"
printf '%02d\tconnection\tSELECT 1\n' "$n" >>"$qdir/list.tsv"
n=$((n + 1))
printf '%02d\tcommand\taggregator status\n' "$n" >>"$qdir/list.tsv"
status_id=$(printf %02d "$n")

# run_one ID DB -> seconds (run in a command substitution: a failure exits it, and the
# assignment then stops the script)
run_one() {
    local t0
    t0=$(bench_now)
    if [ "$1" = "$status_id" ]; then
        TRAINCAST_LOG=warn "$aggregator" status --db "$base/$2" >/dev/null \
            || { log "aggregator status failed on $2"; exit 1; }
    else
        psql -X -q -v ON_ERROR_STOP=1 -o /dev/null -f "$qdir/$1.sql" "$base/$2" \
            || { log "statement $1 failed on $2: $(tr '\n' ' ' <"$qdir/$1.sql")"; exit 1; }
    fi
    echo "$(bench_now) - $t0" | bc -l
}

ids=$(cut -f1 "$qdir/list.tsv")
log "$(wc -l <"$qdir/list.tsv") statements; untimed runs"
: >"$work/sql-rows.tsv"
for id in $ids; do
    # The untimed run on A reads the rows: what a README query returns, a
    # whole view's count; none for the command.
    case "$(awk -F'\t' -v id="$id" '$1 == id { print $2 }' "$qdir/list.tsv")" in
    "README query") rows=$(psql -X -tA -v ON_ERROR_STOP=1 -f "$qdir/$id.sql" "$base/${dbs[0]}" | wc -l) ;;
    "view, whole") rows=$(psql -X -tA -v ON_ERROR_STOP=1 -f "$qdir/$id.sql" "$base/${dbs[0]}") ;;
    *) rows=-; run_one "$id" "${dbs[0]}" >/dev/null ;;
    esac
    run_one "$id" "${dbs[1]}" >/dev/null
    printf '%s\t%s\n' "$id" "$rows" >>"$work/sql-rows.tsv"
done
: >"$work/sql-times.tsv"
for r in $(seq "$runs"); do
    for id in $ids; do
        a=$(run_one "$id" "${dbs[0]}")
        b=$(run_one "$id" "${dbs[1]}")
        printf '%s\t%s\t%s\t%s\n' "$r" "$id" "$a" "$b" >>"$work/sql-times.tsv"
    done
    log "run $r of $runs done"
done

read -r results_a < <(psql -X -tA "$base/${dbs[0]}" -c "SELECT count(*) FROM conv_results")
read -r results_b < <(psql -X -tA "$base/${dbs[1]}" -c "SELECT count(*) FROM conv_results")
read -r other_counts < <(psql -X -tA -F' ' "$base/${dbs[0]}" -c "SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM fits), (SELECT count(*) FROM predictions), (SELECT count(*) FROM devices)")
read -r traces fits predictions devs <<<"$other_counts"
matmuls=$(psql -X -tA "$base/${dbs[0]}" -c "SELECT count(*) FROM matmul_results")
matmuls_b=$(psql -X -tA "$base/${dbs[1]}" -c "SELECT count(*) FROM matmul_results")
data_ratio=$(echo "$results_a / $results_b" | bc -l)

{
    echo "Latency of the SQL run on a fleet's database: every query of README.md's \"Analysis in SQL\""
    echo "section as written, every view read whole (\`SELECT count(v.*) FROM view v\`: every column"
    echo "computed, none sent), and \`aggregator status\`. Database A holds $results_a conv results,"
    echo "B $results_b (the"
    echo "predict benchmark's databases: $devs synthetic GPUs, the conv configs of the CNN set and the transformers at 70 and"
    echo "10 batch sizes); both hold the same $traces traces, $fits fits and $predictions predictions,"
    echo "and $matmuls matmul benchmarks of A ($matmuls_b of B: the matmul configs of the models exported"
    echo "in tests/data, vit_b_16's, swin_t's, convnext_tiny's and the CNNs' classifiers, at the same batch sizes)."
    echo "Each statement ran once untimed on each, then $runs times each, interleaved A B A B, through"
    echo "psql (output discarded; the time includes psql's start and connection, the line \`SELECT 1\`)."
    echo
    printf 'A holds %.1f times the conv results of B. The last column is the median of the per-run\n' "$data_ratio"
    echo "ratios A / B: near that, the statement reads every result; near 1, it reads what both share;"
    echo "well above it, it grows faster than the data."
    echo
    echo "| statement | reads | rows on A (a view's: its count) | median A (s) | max A (s) | median B (s) | A / B |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    while IFS=$'\t' read -r id kind label; do
        rows=$(awk -F'\t' -v id="$id" '$1 == id { print $2 }' "$work/sql-rows.tsv")
        printf '| %s | %s | %s | %.3f | %.3f | %.3f | %.2f |\n' "$kind" "\`$label\`" "$rows" \
            "$(awk -F'\t' -v id="$id" '$2 == id { print $3 }' "$work/sql-times.tsv" | bench_median)" \
            "$(awk -F'\t' -v id="$id" '$2 == id { print $3 }' "$work/sql-times.tsv" | bench_max)" \
            "$(awk -F'\t' -v id="$id" '$2 == id { print $4 }' "$work/sql-times.tsv" | bench_median)" \
            "$(awk -F'\t' -v id="$id" '$2 == id { print $3 / $4 }' "$work/sql-times.tsv" | bench_median)"
    done <"$qdir/list.tsv"
    echo
    faster=$(while IFS=$'\t' read -r id kind label; do
        awk -F'\t' -v id="$id" '$2 == id { print $3 / $4 }' "$work/sql-times.tsv" | bench_median \
            | awk -v d="$data_ratio" -v l="$label" '$1 > 1.25 * d { printf "`%s` (%.2f)\n", l, $1 }'
    done <"$qdir/list.tsv" | paste -sd ';' | sed 's/;/; /g')
    printf 'Statements whose A / B is over 1.25 times the data'"'"'s (%.1f): %s.\n' "$data_ratio" "${faster:-none}"
    echo
    echo "The README queries in the order of the section (\`reads\` names the first relation after FROM):"
    echo
    for id in $(awk -F'\t' '$2 == "README query" { print $1 }' "$qdir/list.tsv"); do
        echo "- $id: \`$(tr '\n' ' ' <"$qdir/$id.sql" | sed -E 's/ +/ /g; s/ $//' | cut -c1-160)\`"
    done
} >"$out"
log "wrote $out"
cat "$out"
