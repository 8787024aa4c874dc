#!/usr/bin/env bash
# test_packages.sh BUILD_DIR
#
# The Debian packages of the build (cpack -G DEB), one per role: each holds
# its binary and not the other's, its systemd unit running that binary, man
# pages generated from --help (with the options --help lists), the bash
# completion, its docs, and the postinst that makes the service user; the
# completion completes commands and options from the binaries. Skipped (77)
# without cpack, dpkg-deb or help2man.
set -euo pipefail

build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb help2man; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done

(cd "$build" && cpack -G DEB -D CPACK_OUTPUT_FILE_PREFIX="$work/out" -B "$work/cpack" \
    >"$work/cpack.log" 2>&1) \
    || fail "cpack: $(tail -20 "$work/cpack.log")"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
prefix=${prefix#/}

for role in agent aggregator; do
    other=aggregator
    [ "$role" = aggregator ] && other=agent
    deb=$(ls "$work"/out/traincast-"$role"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || fail "no traincast-$role package: $(ls "$work/out")"
    [ "$(dpkg-deb -f "$deb" Package)" = "traincast-$role" ] || fail "$deb: wrong package name"
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./##' >"$work/$role.list"
    has() { grep -qxF "$1" "$work/$role.list" || fail "traincast-$role lacks $1"; }
    has "$prefix/bin/$role"
    grep -qx "$prefix/bin/$other" "$work/$role.list" && fail "traincast-$role holds the $other"
    unit=traincast-$role.service
    [ "$role" = agent ] && unit=traincast-agent@.service
    has "$prefix/lib/systemd/system/$unit"
    has "$prefix/share/man/man1/$role.1.gz"
    has "$prefix/share/bash-completion/completions/$role"
    has "$prefix/share/doc/traincast-$role/operator-guide.md"
    has "$prefix/share/traincast/deploy/$role.conf"
    dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep postinst >/dev/null || fail "traincast-$role has no postinst"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$prefix/lib/systemd/system/$unit" >"$work/$unit"
    grep -q "^ExecStart=/$prefix/bin/$role " "$work/$unit" \
        || fail "$unit does not run /$prefix/bin/$role: $(grep ExecStart "$work/$unit")"
    # A man page per command, saying what --help says.
    for cmd in $("$build/$role/$role" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'); do
        has "$prefix/share/man/man1/$role-$cmd.1.gz"
    done
    echo "ok: traincast-$role ($(wc -l <"$work/$role.list") entries; depends: $(dpkg-deb -f "$deb" Depends))"
done
dpkg-deb --fsys-tarfile "$work"/out/traincast-aggregator_*.deb \
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
