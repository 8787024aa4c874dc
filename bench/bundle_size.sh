#!/usr/bin/env bash
# bundle_size.sh [--build-dir DIR] [--runs N] [--out FILE]
#
# The relocatable agent bundle (deploy/package.sh --bundle) of a build: its
# size compressed and unpacked against the 40 MiB goal, what takes the
# room, the oldest glibc it runs on, and what its launcher costs at start:
# `agent --version` through the bundle's bin/agent (a shell script that
# checks the glibc version) against the build's binary, A B A B, N runs each.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
runs=20
out=
while [ $# -gt 0 ]; do
    case "$1" in
    --build-dir) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bundle_size.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

line=$("$repo/deploy/package.sh" --bundle --build-dir "$build" --no-build --out "$tmp/agent.tar.gz" | tail -n 1)
tar -C "$tmp" -xzf "$tmp/agent.tar.gz"
root=$(echo "$tmp"/traincast-agent-*/)
kib=$(du -k "$tmp/agent.tar.gz" | cut -f1)
glibc=$(sed -n 's/.*needs glibc \([0-9.]*\).*/\1/p' <<<"$line")

# What takes the room, compressed each on its own (gzip -9).
part() { # LABEL FILES...
    local label=$1
    shift
    local raw gz
    raw=$(cat "$@" | wc -c)
    gz=$(cat "$@" | gzip -9 | wc -c)
    awk -v l="$label" -v r="$raw" -v g="$gz" 'BEGIN { printf "| %s | %.1f | %.1f |\n", l, r / 1048576, g / 1048576 }'
}
libs_big=$(ls -S "$root"/lib/* | head -n 1)
others=$(ls -S "$root"/lib/* | tail -n +2)

# Start-up: bundle launcher against the build's binary, interleaved.
for _ in $(seq "$runs"); do
    t0=$(bench_now); "$root/bin/agent" --version >/dev/null; t1=$(bench_now)
    awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }' >>"$tmp/a"
    t0=$(bench_now); "$build/agent/agent" --version >/dev/null; t1=$(bench_now)
    awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }' >>"$tmp/b"
done
a=$(bench_median <"$tmp/a"); b=$(bench_median <"$tmp/b")

report() { # no title: deploy/bench.sh adds it with when and how the run went
    awk -v k="$kib" -v u="$(du -sk "$root" | cut -f1)" -v n="$(ls "$root/lib" | wc -l)" -v g="$glibc" \
        'BEGIN { printf "Compressed **%.1f MiB** (goal: 40 MiB or less), %.1f MiB unpacked, %d libraries; runs on glibc %s or newer.\n", k / 1024, u / 1024, n, g }'
    echo
    echo "| part | MiB | MiB gzip -9 |"
    echo "|---|---:|---:|"
    part "the agent (libexec/agent)" "$root/libexec/agent"
    # shellcheck disable=SC2086  # one file name a word
    part "$(basename "$libs_big")" "$libs_big"
    # shellcheck disable=SC2086
    part "the other $(echo "$others" | wc -l) libraries" $others
    part "the committed exports and conv list" "$root"/share/traincast/models/*
    part "harness, check, launcher, docs" "$root"/share/traincast/harness/* "$root"/share/traincast/check/* "$root/bin/agent" "$root/gpu-check.sh" "$root/README.txt"
    echo
    awk -v a="$a" -v b="$b" -v n="$runs" 'BEGIN { printf "`agent --version` through the bundle'"'"'s launcher / the binary alone: **%.2f** (medians %.1f / %.1f ms, %d runs each, interleaved): the launcher checks the glibc version and names the Python the agent runs.\n", a / b, a * 1000, b * 1000, n }'
}
if [ -n "$out" ]; then report >"$out"; else report; fi
