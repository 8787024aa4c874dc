#!/usr/bin/env bash
# test.sh [CTEST_ARGS...]
#
# The whole test suite from a fresh Debian 12 machine: installs what is
# missing, builds with warnings as errors, and runs every test with ctest
# (which starts and stops a throwaway PostgreSQL for the integration tests).
# Extra arguments go to ctest, e.g. `./deploy/test.sh -L unit`.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRAINCAST_BUILD_DIR:-$repo/build}

"$repo/deploy/setup.sh" --werror --build-dir "$build_dir"

cd "$build_dir"
# Stop the test cluster even when ctest is interrupted.
trap '"$repo/deploy/pg-local.sh" stop "$build_dir/test-pg" >/dev/null 2>&1 || true' EXIT
ctest --output-on-failure --timeout 1200 -j2 "$@"
