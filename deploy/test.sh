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

# What the suite writes at its peak (the test PostgreSQL, scratch trees, the
# package roots) takes about 0.5 GB beyond the build: on a fuller disk, say
# so before tests fail with "No space left on device" for a reason not theirs.
need_mb=1024
for d in "$build_dir" "${TMPDIR:-/tmp}"; do
    read -r free_mb mount < <(df -Pm "$d" | awk 'NR == 2 {print $4, $6}')
    if [ -n "${free_mb:-}" ] && [ "$free_mb" -lt "$need_mb" ]; then
        echo "test: warning: $free_mb MB free on $mount (for $d); the suite needs about" \
            "$need_mb MB there, and tests that fail with 'No space left on device' fail for that" >&2
    fi
done

cd "$build_dir"
# Stop the test cluster even when ctest is interrupted.
trap '"$repo/deploy/pg-local.sh" stop "$build_dir/test-pg" >/dev/null 2>&1 || true' EXIT
ctest --output-on-failure --timeout 1200 -j2 "$@"
