#!/usr/bin/env bash
# deploy_files.sh AGENT AGGREGATOR BUILD_DIR
#
# The example config files and systemd units in deploy/ against the real
# binaries, so they cannot drift from the flags:
#   - each config file passes '--config FILE --check-config' of the command its
#     unit runs, and so does every commented-out 'key = value' example in it;
#   - the check fails, naming the key, when a key the command lacks is added;
#   - every ExecStart= of the units, with the unit's paths pointed at the
#     build and the example configs, passes --check-config;
#   - systemd-analyze verify accepts the units (when systemd-analyze exists);
#   - 'cmake --install' puts the binaries, the harness, the ONNX exports, the
#     documentation and the units (running the installed binaries) where the
#     units expect them (under a scratch prefix standing for /usr/local), and
#     the installed agent imports a model with the agent unit's environment.
set -euo pipefail

agent=$1
aggregator=$2
build=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_ok CMD...: exit 0 and the 'are valid' line.
expect_ok() {
    local out
    out=$("$@" 2>&1) || fail "$* exited $?: $out"
    grep -q "are valid" <<<"$out" || fail "$*: no confirmation in: $out"
    echo "ok: $out"
}

# check_config PROG CONFIG: the file, its commented examples, and a bad key.
check_config() {
    local cmd=$1 conf=$2 name
    name=$(basename "$conf")
    # shellcheck disable=SC2086
    expect_ok $cmd --config "$conf" --check-config
    # Commented-out examples ('# key = value') must be valid keys too.
    sed -E 's/^#[[:space:]]*([a-z][a-z0-9-]*[[:space:]]*=)/\1/' "$conf" >"$work/all-$name"
    local examples
    examples=$(grep -cE '^#[[:space:]]*[a-z][a-z0-9-]*[[:space:]]*=' "$conf" || true)
    # shellcheck disable=SC2086
    expect_ok $cmd --config "$work/all-$name" --check-config
    echo "   ($examples commented example keys of $name included)"
    # A key the command does not have fails, exit 2, naming the key.
    { cat "$conf"; echo "no-such-key = 1"; } >"$work/bad-$name"
    local out rc=0
    # shellcheck disable=SC2086
    out=$($cmd --config "$work/bad-$name" --check-config 2>&1) || rc=$?
    [ "$rc" -eq 2 ] || fail "$cmd with an unknown key exited $rc (want 2): $out"
    grep -q "unknown key 'no-such-key'" <<<"$out" || fail "the error does not name the key: $out"
    echo "ok: an unknown key is refused: $out"
}

check_config "$aggregator serve" "$repo/deploy/config/aggregator.conf"
check_config "$agent serve" "$repo/deploy/config/agent.conf"
# The user guide runs 'agent run' with an agent's config file too.
check_config "$agent run --models resnet18 --batches 2" "$repo/deploy/config/agent.conf"

# The units' command lines, with the build's binaries and the example configs.
units=("$repo/deploy/systemd/traincast-aggregator.service" "$repo/deploy/systemd/traincast-agent@.service")
for unit in "${units[@]}"; do
    n=0
    while IFS= read -r line; do
        cmdline=${line#*=}
        cmdline=${cmdline//\/usr\/local\/bin\/agent/$agent}
        cmdline=${cmdline//\/usr\/local\/bin\/aggregator/$aggregator}
        cmdline=${cmdline//\/etc\/traincast\/aggregator.conf/$repo/deploy/config/aggregator.conf}
        cmdline=${cmdline//\/etc\/traincast\/agent-%i.conf/$repo/deploy/config/agent.conf}
        cmdline=${cmdline//%S/$work/state}
        cmdline=${cmdline//%C/$work/cache}
        cmdline=${cmdline//%i/cuda0}
        case "$cmdline" in *%*) fail "$(basename "$unit"): unhandled specifier in: $line" ;; esac
        # shellcheck disable=SC2086
        expect_ok $cmdline --check-config
        n=$((n + 1))
    done < <(grep -E '^ExecStart=' "$unit")
    [ "$n" -gt 0 ] || fail "$(basename "$unit") has no ExecStart="
done

# The units themselves. systemd-analyze verify wants the executables to exist,
# so a copy points them at the build; an instance with ':' in its name is not
# verifiable as a file name, which is one more reason the instances are
# colon-free labels (cuda0).
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$work/units"
    for unit in "${units[@]}"; do
        base=$(basename "$unit")
        [ "$base" = "traincast-agent@.service" ] && base="traincast-agent@cuda0.service"
        sed -e "s#/usr/local/bin/agent#$agent#g" -e "s#/usr/local/bin/aggregator#$aggregator#g" \
            "$unit" >"$work/units/$base"
        out=$(systemd-analyze verify --man=no "$work/units/$base" 2>&1) \
            || fail "systemd-analyze verify $base: $out"
        [ -z "$out" ] || fail "systemd-analyze verify $base warns: $out"
        echo "ok: systemd-analyze verify $base"
    done
else
    echo "note: systemd-analyze not installed; the unit files were not verified by systemd"
fi
# The install tree the units point at, under a scratch prefix.
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 \
    || fail "cmake --install: $(cat "$work/install.log")"
for unit in "${units[@]}"; do
    while IFS= read -r path; do
        [ -e "$prefix${path#/usr/local}" ] || fail "$(basename "$unit") names $path, which cmake --install does not create"
    done < <(grep -oE '/usr/local/[^ )]+' "$unit" | sort -u)
done
agent_unit=$repo/deploy/systemd/traincast-agent@.service
unit_env() { sed -n "s#^Environment=$1=/usr/local#$prefix#p" "$agent_unit"; }
harness=$(unit_env TRAINCAST_HARNESS_DIR)
data=$(unit_env TRAINCAST_DATA_DIR)
[ -f "$harness/trace_runner.py" ] || fail "no harness in $harness"
[ -f "$data/resnet18.onnx" ] || fail "no ONNX exports in $data"
for unit in "${units[@]}"; do
    role=aggregator
    case "$(basename "$unit")" in traincast-agent*) role=agent ;; esac
    [ -f "$prefix/share/doc/traincast-$role/operator-guide.md" ] \
        || fail "the operator guide is not installed for the $role"
    # The build's prefix is /usr/local: the installed unit is the unit.
    cmp -s "$unit" "$prefix/lib/systemd/system/$(basename "$unit")" \
        || fail "$(basename "$unit") is not installed in lib/systemd/system as it is in deploy/"
done
# Without PyTorch (TRAINCAST_PYTHON fails), the installed agent reads the installed export.
out=$(env TRAINCAST_HARNESS_DIR="$harness" TRAINCAST_DATA_DIR="$data" TRAINCAST_PYTHON=/bin/false \
      TRAINCAST_CACHE="$work/cache" "$prefix/bin/agent" model describe torchvision:resnet18 2>&1) \
    || fail "the installed agent cannot import torchvision:resnet18: $out"
echo "ok: cmake --install gives what the units name; the installed agent reads $(basename "$data")/resnet18.onnx"
echo "deploy files: all checks passed"
