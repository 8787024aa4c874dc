# shellcheck shell=bash
# bench/lib.sh: helpers shared by the benchmark scripts (sourced, not run).
#
#   bench_machine_md           machine details as Markdown list items
#   bench_cpu_model            the CPU's model name
#   bench_mem                  total memory, e.g. "23.5 GiB"
#   bench_loadavg              the load average over 1, 5 and 15 min
#   bench_machine_line DIR     date, CPUs, memory, kernel, DIR's file system:
#                              one line of a report's machine section
#   bench_host_load            e.g. "vm (2 CPUs, load average 0.90 1.37 1.36)"
#   bench_monitor_start FILE   sample the load average and CPU use every 2 s into FILE
#   bench_monitor_stop         stop sampling; prints one line summarizing the samples
#   bench_median / bench_min / bench_max   of numbers on stdin, one a line
#   bench_free_port            a free TCP port on 127.0.0.1
#   bench_now                  seconds since the epoch, with nanoseconds
#   bench_peak_rss_kb CMD...   runs CMD; its peak resident set size (KiB) goes to
#                              $BENCH_PEAK_RSS_FILE (GNU time)
#   bench_fleet_db ...         generate (or reuse) a synthetic fleet's database
#   bench_fleet_dbs ...        the two of the predict and SQL latency benchmarks

bench_python=${TRAINCAST_PYTHON:-/usr/bin/python3}

bench_now() { date +%s.%N; }

bench_median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}
bench_min() { sort -g | head -n 1; }
bench_max() { sort -g | tail -n 1; }

bench_free_port() {
    "$bench_python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Library versions the measurements depend on, one "name version" per line.
bench_versions() {
    local build=${1:-build}
    local onednn cuda pg torch
    onednn=$("$build/agent/agent" info 2>/dev/null | sed -n 's/^  cpu  *oneDNN \([0-9.]*\).*/\1/p' | head -n 1)
    # (the library's file is this machine's: the report keeps its version and whose it is)
    cuda=$("$build/agent/agent" info 2>/dev/null | sed -n 's/^  cuda  *//p' | head -n 1 | sed -E 's#\(/[^,)]*, #(#')
    pg=$(psql --version 2>/dev/null | awk '{ print $3 }')
    torch=$("$bench_python" -c 'import torch, torchvision; print("PyTorch %s, torchvision %s" % (torch.__version__, torchvision.__version__))' 2>/dev/null || echo "PyTorch not installed")
    echo "oneDNN ${onednn:-?} (agent), cuda backend: ${cuda:-?}; PostgreSQL ${pg:-?}; $torch; $(gcc --version | head -n 1); $(getconf GNU_LIBC_VERSION 2>/dev/null)"
}

bench_cpu_model() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'; }
# The machine's kind in one word: CPU model, family.model.stepping, the
# level-3 cache it reports, logical CPUs. Host names do not tell virtual
# machines apart (each may be called the same), and two kinds run the same
# conv at different speeds, so a study's rounds must share this.
bench_machine_kind() {
    local fms l3
    fms=$(awk -F: '/^cpu family/ { f = $2 } /^model\t/ { m = $2 } /^stepping/ { s = $2 }
                   END { gsub(/ /, "", f); gsub(/ /, "", m); gsub(/ /, "", s); print f "." m "." s }' /proc/cpuinfo)
    l3=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || echo none)
    echo "$(bench_cpu_model | tr -c 'A-Za-z0-9.\n-' '_')/$fms/l3-$l3/$(nproc)cpu"
}
# bench_settings_extends STORED NOW: true when the settings line NOW is the
# stored line STORED with more rounds (rounds=N) and nothing else changed:
# a study may be given more rounds, since the rounds it has stay rounds of
# the same study; any other change makes another study.
bench_settings_extends() {
    local was now
    was=$(tr ' ' '\n' <<<"$1" | sed -n 's/^rounds=//p')
    now=$(tr ' ' '\n' <<<"$2" | sed -n 's/^rounds=//p')
    [[ $was =~ ^[0-9]+$ && $now =~ ^[0-9]+$ ]] && [ "$now" -gt "$was" ] || return 1
    [ "$(tr ' ' '\n' <<<"$1" | grep -v '^rounds=')" = "$(tr ' ' '\n' <<<"$2" | grep -v '^rounds=')" ]
}
# A study's rounds (bench/accuracy.sh): ROUNDS_DONE lists "CNN LABEL" per
# round measured. A regular round's label is its number; the K-th extra round
# after the R-th regular one (a CNN whose rounds disagree, measured again) is
# RxK, so that a study given more rounds later numbers its new regular rounds
# apart from the extra ones already taken. Studies written before extra rounds
# were labelled so numbered them R+1, R+2...: bench_extra_round keeps that
# numbering where such a round exists beyond the count, so that those studies
# resume as they were measured.
#
# bench_rounds_complete N ROUNDS_DONE: the CNNs with every regular round 1..N.
bench_rounds_complete() {
    awk -v n="$1" '$2 ~ /^[0-9]+$/ && $2 + 0 <= n + 0 && !seen[$1 " " $2]++ { c[$1]++ }
                   END { for (m in c) if (c[m] == n) print m }' "$2" | sort
}
# bench_extra_round R K ROUNDS_DONE: the label of the K-th extra round after R.
bench_extra_round() {
    if awk -v n="$1" '$2 ~ /^[0-9]+$/ && $2 + 0 > n + 0 { found = 1 } END { exit !found }' "$3"; then
        echo $(($1 + $2))
    else
        echo "${1}x$2"
    fi
}
bench_mem() { awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo; }
bench_loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

bench_machine_line() {
    local fs
    fs=$(df -T "$1" | awk 'NR == 2 { print $2 }')
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) logical CPUs ($(bench_cpu_model)), $(bench_mem), $(uname -sr), $fs disk"
}

bench_host_load() {
    echo "$(uname -n) ($(nproc) CPUs, load average $(bench_loadavg))"
}

bench_machine_md() {
    local build=${1:-build}
    local cpu cores mem gpu
    cpu=$(bench_cpu_model)
    cores=$(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
    mem=$(bench_mem)
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd ';' || true)
    echo "- host $(uname -n): $cpu, $(nproc) logical CPUs ($cores physical cores), $mem memory"
    echo "- $(uname -sr), $( . /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "- GPU: ${gpu:-none}"
    echo "- $(bench_versions "$build")"
}

# "busy total" jiffies of all CPUs.
bench_cpu_jiffies() {
    awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

bench_monitor_pid=
bench_monitor_file=
bench_monitor_start() {
    bench_monitor_file=$1
    : >"$bench_monitor_file"
    read -r bench_monitor_busy0 bench_monitor_total0 < <(bench_cpu_jiffies)
    (
        while :; do
            cut -d' ' -f1 /proc/loadavg >>"$bench_monitor_file"
            sleep 2
        done
    ) &
    bench_monitor_pid=$!
}

# Prints e.g. "load average (1 min) 1.9 to 3.4, median 2.6 (40 samples); all CPUs 97 % busy"
bench_monitor_stop() {
    [ -n "$bench_monitor_pid" ] || return 0
    kill "$bench_monitor_pid" 2>/dev/null || true
    wait "$bench_monitor_pid" 2>/dev/null || true
    bench_monitor_pid=
    local busy1 total1 busy n
    read -r busy1 total1 < <(bench_cpu_jiffies)
    busy=$(( total1 > bench_monitor_total0 ? 100 * (busy1 - bench_monitor_busy0) / (total1 - bench_monitor_total0) : 0 ))
    n=$(wc -l <"$bench_monitor_file")
    printf 'load average (1 min) %s to %s, median %s (%s samples); all CPUs %s %% busy\n' \
        "$(bench_min <"$bench_monitor_file")" "$(bench_max <"$bench_monitor_file")" \
        "$(bench_median <"$bench_monitor_file")" "$n" "$busy"
}

# Peak RSS of a command: bench_peak_rss_kb CMD... (exit status of CMD).
bench_peak_rss_kb() {
    local f=${BENCH_PEAK_RSS_FILE:?}
    /usr/bin/time -f '%M' -o "$f" "$@"
}

bench_require_time() {
    [ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (GNU time) is missing: install the Debian package 'time' (deploy/setup.sh does)" >&2; exit 2; }
}

# bench_fleet_db BUILD ADMIN_DSN NAME BATCHES DEVICES FRESH LOGDIR: the
# database NAME on the server of ADMIN_DSN holding a synthetic fleet, as the
# predict and SQL latency benchmarks read it: DEVICES synthetic GPUs, every
# conv config of the CNN set (tests/data/cnn_set.convs) and every conv and
# matmul config of the models exported in tests/data (the CNN set's, and
# vit_b_16's and swin_t's) in every direction it needs at every batch of
# BATCHES (tc-gen-predict-db's list), loaded with COPY; six
# CNNs traced on every device and `aggregator fit` run. A database
# generated with the same settings is reused (and migrated) unless FRESH is 1;
# the fit's log goes to LOGDIR.
bench_fleet_db() {
    local build=$1 admin=$2 name=$3 batches=$4 devices=$5 fresh=$6 logdir=$7
    local repo aggregator gen dsn key t0 t1 onnx
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    aggregator=$build/aggregator/aggregator gen=$build/bench/tc-gen-predict-db
    dsn=${admin%/*}/$name
    onnx=$(printf '%s\n' "$repo"/tests/data/*.onnx | paste -sd,)
    key="devices=$devices batches=$batches convs=$(sha256sum <"$repo/tests/data/cnn_set.convs" | cut -c1-16) models=$(cat "$repo"/tests/data/*.onnx | sha256sum | cut -c1-16) gen=6"
    if [ "$fresh" -eq 0 ] && [ "$(psql -X -tA "$dsn" -c "SELECT key FROM bench_predict_meta" 2>/dev/null)" = "$key" ]; then
        echo "bench: reusing database $name ($key)" >&2
        "$aggregator" migrate --db "$dsn" >/dev/null # a database of an older schema: brought up to date
        return 0
    fi
    t0=$(bench_now)
    echo "bench: generating database $name ($key)" >&2
    psql -X -q "$admin" -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name" >/dev/null
    "$aggregator" migrate --db "$dsn" >/dev/null
    "$gen" --table devices --devices "$devices" | psql -X -q "$dsn" -c "COPY devices (device_id, uuid, kind, name, host, gpu_index, compute_capability, multiprocessors, memory_bytes, clock_mhz, memory_clock_mhz, driver_version, runtime_version, library, library_version) FROM STDIN"
    "$gen" --table configs --convs "$repo/tests/data/cnn_set.convs" --models "$onnx" | psql -X -q "$dsn" -c "COPY conv_configs ($("$gen" --table configs --columns)) FROM STDIN"
    "$gen" --table results --devices "$devices" --batches "$batches" --convs "$repo/tests/data/cnn_set.convs" --models "$onnx" \
        | psql -X -q "$dsn" -c "COPY conv_results (message_id, seq, device_id, config_id, batch, direction, policy, backend, algo, algo_id, median_ms, min_ms, max_ms, stddev_ms, repetitions, workspace_bytes, measured_at, library_version, samples_ms, sample_offsets_us) FROM STDIN"
    "$gen" --table matmul-configs --models "$onnx" | psql -X -q "$dsn" -c "COPY matmul_configs ($("$gen" --table matmul-configs --columns)) FROM STDIN"
    "$gen" --table matmul-results --devices "$devices" --batches "$batches" --models "$onnx" \
        | psql -X -q "$dsn" -c "COPY matmul_results (message_id, seq, device_id, config_id, batch, direction, policy, backend, algo, route, median_ms, min_ms, max_ms, stddev_ms, repetitions, measured_at, samples_ms, sample_offsets_us) FROM STDIN"
    psql -X -q "$dsn" -c "SELECT setval('devices_device_id_seq', (SELECT max(device_id) FROM devices))" \
        -c "SELECT setval('conv_configs_config_id_seq', (SELECT max(config_id) FROM conv_configs))" \
        -c "SELECT setval('matmul_configs_config_id_seq', (SELECT max(config_id) FROM matmul_configs))" >/dev/null
    t1=$(bench_now)
    "$gen" --traces --db "$dsn" --devices "$devices" --batches "$batches" --models-dir "$repo/tests/data"
    psql -X -q "$dsn" -c "VACUUM ANALYZE"
    TRAINCAST_LOG=warn "$aggregator" fit --db "$dsn" --no-validate --forms ols,nnls >"$logdir/fit-$name.log" 2>&1 \
        || { cat "$logdir/fit-$name.log" >&2; echo "bench: aggregator fit failed on $name" >&2; return 1; }
    psql -X -q "$dsn" -c "CREATE TABLE bench_predict_meta (key text)" -c "INSERT INTO bench_predict_meta VALUES ('$key')"
    echo "bench: database $name: loaded with COPY in $(printf %.0f "$(echo "$t1 - $t0" | bc -l)") s, traces and fits in $(printf %.0f "$(echo "$(bench_now) - $t1" | bc -l)") s" >&2
}

# The predict and SQL latency benchmarks' two fleets: A at 70 batch sizes (1.29 million conv
# results with 10 devices), B at the 10 powers of two.
bench_fleet_large=bench_predict_large
bench_fleet_small=bench_predict_small
# bench_fleet_dbs BUILD ADMIN_DSN DEVICES FRESH LOGDIR: both, as bench_fleet_db makes one.
bench_fleet_dbs() {
    bench_fleet_db "$1" "$2" "$bench_fleet_large" "1..512,24..512:8" "$3" "$4" "$5"
    bench_fleet_db "$1" "$2" "$bench_fleet_small" "1..512" "$3" "$4" "$5"
}
