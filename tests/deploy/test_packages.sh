#!/usr/bin/env bash
# test_packages.sh BUILD_DIR [OUT_DIR]
#
# The Debian packages of the build (cpack -G DEB): traincast-common holds
# the harness and the CNN set's exports that the others depend on;
# traincast-agent-cpu (always) and traincast-agent (a build with CUDA) each
# hold the agent, traincast-aggregator the aggregator, each its binary and
# not the other's, its systemd unit running that binary, man pages
# generated from --help (with the options --help lists), the bash
# completion, its docs, and the postinst that makes the service user; no
# file is in two packages but the two agents' (which conflict). The
# completion completes commands and options from the binaries. Whether each
# installs and runs: test_package_install.sh, which takes the packages this
# test leaves in OUT_DIR (emptied first; default: a temporary folder).
# Skipped (77) without cpack, dpkg-deb or help2man.
set -euo pipefail

build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb help2man; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done

out=${2:-$work/out}
rm -rf "$out"
(cd "$build" && cpack -G DEB -D CPACK_OUTPUT_FILE_PREFIX="$out" -B "$work/cpack" \
    >"$work/cpack.log" 2>&1) \
    || fail "cpack: $(tail -20 "$work/cpack.log")"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
prefix=${prefix#/}
list() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {print $6}' | sed 's#^\./##'; }

common=$(ls "$out"/traincast-common_*_all.deb 2>/dev/null | head -1)
[ -n "$common" ] || fail "no traincast-common package (Architecture: all): $(ls "$out")"
list "$common" >"$work/common.list"
for f in harness/export_onnx.py harness/trace_runner.py models/resnet50.onnx models/cnn_set.convs; do
    grep -qxF "$prefix/share/traincast/$f" "$work/common.list" || fail "traincast-common lacks $f"
done
grep -qvE "^$prefix/share/(traincast|doc)/" "$work/common.list" \
    && fail "traincast-common holds more than share/traincast: $(grep -vE "^$prefix/share/(traincast|doc)/" "$work/common.list" | head -3)"
echo "ok: traincast-common ($(wc -l <"$work/common.list") files)"

packages="traincast-agent-cpu traincast-aggregator"
# A build with CUDA makes the CPU-only agent beside its own.
[ -x "$build/agent/cpu/agent" ] && packages="traincast-agent $packages"
for package in $packages; do
    role=agent other=aggregator bin=$build/agent/agent
    if [ "$package" = traincast-aggregator ]; then
        role=aggregator other=agent bin=$build/aggregator/aggregator
    fi
    [ "$package" = traincast-agent-cpu ] && [ -x "$build/agent/cpu/agent" ] && bin=$build/agent/cpu/agent
    deb=$(ls "$out"/"$package"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || fail "no $package package: $(ls "$out")"
    [ "$(dpkg-deb -f "$deb" Package)" = "$package" ] || fail "$deb: wrong package name"
    dpkg-deb -f "$deb" Depends | grep -q 'traincast-common (= ' \
        || fail "$package does not depend on traincast-common: $(dpkg-deb -f "$deb" Depends)"
    list "$deb" >"$work/$package.list"
    has() { grep -qxF "$1" "$work/$package.list" || fail "$package lacks $1"; }
    has "$prefix/bin/$role"
    grep -qx "$prefix/bin/$other" "$work/$package.list" && fail "$package holds the $other"
    both=$(sort "$work/common.list" "$work/$package.list" | uniq -d | head -3)
    [ -z "$both" ] || fail "$package and traincast-common both hold $both"
    unit=traincast-$role.service
    [ "$role" = agent ] && unit=traincast-agent@.service
    has "$prefix/lib/systemd/system/$unit"
    has "$prefix/share/man/man1/$role.1.gz"
    has "$prefix/share/bash-completion/completions/$role"
    has "$prefix/share/doc/$package/operator-guide.md"
    has "$prefix/share/traincast/deploy/$role.conf"
    dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep postinst >/dev/null || fail "$package has no postinst"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$prefix/lib/systemd/system/$unit" >"$work/$unit"
    grep -q "^ExecStart=/$prefix/bin/$role " "$work/$unit" \
        || fail "$unit does not run /$prefix/bin/$role: $(grep ExecStart "$work/$unit")"
    # A man page per command, saying what --help says.
    for cmd in $("$bin" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'); do
        has "$prefix/share/man/man1/$role-$cmd.1.gz"
    done
    echo "ok: $package ($(wc -l <"$work/$package.list") files; depends: $(dpkg-deb -f "$deb" Depends))"
done
if [ -f "$work/traincast-agent.list" ]; then
    [ "$(dpkg-deb -f "$out"/traincast-agent_*.deb Conflicts)" = traincast-agent-cpu ] \
        || fail "traincast-agent does not conflict with traincast-agent-cpu"
    [ "$(dpkg-deb -f "$out"/traincast-agent-cpu_*.deb Conflicts)" = traincast-agent ] \
        || fail "traincast-agent-cpu does not conflict with traincast-agent"
    echo "ok: the two agents conflict (they hold the same files)"
fi
dpkg-deb --fsys-tarfile "$out"/traincast-aggregator_*.deb \
    | tar -xO "./$prefix/share/man/man1/aggregator-predict.1.gz" | gzip -dc >"$work/predict.1"
grep -q 'extrapolate' "$work/predict.1" || fail "aggregator-predict(1) lacks --extrapolate"
grep -q '^\.TH AGGREGATOR-PREDICT ' "$work/predict.1" || fail "aggregator-predict(1) has no title"
echo "ok: aggregator-predict(1) documents --extrapolate"

# The completion, with the built binaries first on PATH.
repo=$(cd "$(dirname "$0")/../.." && pwd)
complete_words() {
    PATH="$build/agent:$build/aggregator:$PATH" bash -c '
        source "$0"
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _traincast; printf "%s\n" "${COMPREPLY[@]}"' "$repo/deploy/bash-completion/traincast" "$@"
}
complete_words aggregator pre | grep -x predict >/dev/null || fail "'aggregator pre<TAB>' does not give predict"
complete_words aggregator ex | grep -x export >/dev/null || fail "'aggregator ex<TAB>' does not give export"
complete_words aggregator predict --extra | grep -x -- --extrapolate >/dev/null \
    || fail "'aggregator predict --extra<TAB>' does not give --extrapolate"
complete_words agent status --format "" | grep -x csv >/dev/null || fail "'--format <TAB>' does not give csv"
complete_words agent model describe --fo | grep -x -- --format >/dev/null \
    || fail "'agent model describe --fo<TAB>' does not give --format"
complete_words aggregator predict --dtype "" | grep -x fp32_strict >/dev/null \
    || fail "'--dtype <TAB>' does not give fp32_strict"
# Model names from the harness's cached list, device names from this machine.
names=$(mktemp -d)
mkdir -p "$names/onnx" && printf 'resnet18\nresnet50\nvgg11\n' >"$names/onnx/torchvision-models.txt"
TRAINCAST_CACHE=$names complete_words aggregator predict --model tor | grep -x torchvision:resnet50 \
    >/dev/null || fail "'--model tor<TAB>' does not give torchvision:resnet50"
TRAINCAST_CACHE=$names complete_words aggregator predict --model torchvision : res \
    | grep -x resnet50 >/dev/null || fail "'--model torchvision:res<TAB>' does not give resnet50"
TRAINCAST_CACHE=$names complete_words agent trace --models resnet18,vg | grep -x resnet18,vgg11 \
    >/dev/null || fail "'--models resnet18,vg<TAB>' does not give resnet18,vgg11"
rm -rf "$names"
complete_words agent bench --device "" | grep -x cpu >/dev/null \
    || fail "'agent bench --device <TAB>' does not give cpu"
echo "ok: bash completion of commands, options and values"
echo "packages: all checks passed"
