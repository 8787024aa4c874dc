#!/bin/sh
# Run a fuzz target (the importer's, the wire path's) for a bounded time: run.sh FUZZER SECONDS
# SCRATCH_DIR SEED_DIR... New inputs go to SCRATCH_DIR, never to the seeds.
set -eu
fuzzer=$1
seconds=$2
scratch=$3
shift 3
mkdir -p "$scratch"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 "$scratch" "$@"
