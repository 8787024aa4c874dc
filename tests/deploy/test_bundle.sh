#!/usr/bin/env bash
# test_bundle.sh BUILD_DIR
#
# The relocatable agent bundle (deploy/package.sh --bundle) is
# self-contained: it is made from this build, unpacked into a root that
# holds glibc and a shell and nothing else (no Python, no CUDA, no Debian
# library the build used), and run there with chroot, in a private mount
# namespace with /proc, /sys and /dev bound in: `agent --version`, `agent
# info`, a model described from the bundled exports and a CPU conv
# benchmark (oneDNN, with the bundle's tcmalloc preloaded) must work, and a
# GPU command must fail with one clear line. Any library the bundle lacks
# fails it. Needs root, or user namespaces (unshare -r); skipped (77)
# otherwise.
set -uo pipefail

build=${1:?usage: test_bundle.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build=$PWD/$build ;; esac

# Root, or root in a user namespace of our own, with a private mount table.
if [ -z "${TC_BUNDLE_TEST_NS:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        ns=(unshare -m --propagation private)
    else
        ns=(unshare -r -m --propagation private)
    fi
    if ! "${ns[@]}" true 2>/dev/null; then
        echo "skipped: cannot make a private mount namespace here (${ns[*]} failed): the bundle is not checked"
        exit 77
    fi
    TC_BUNDLE_TEST_NS=1 exec "${ns[@]}" "$0" "$@"
fi

tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
    for m in proc sys dev; do umount -l "$root/$m" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 1. The bundle of this build.
if ! out=$("$repo/deploy/package.sh" --bundle --build-dir "$build" --no-build --out "$tmp/agent.tar.gz" 2>&1); then
    echo "$out"
    echo "FAIL: deploy/package.sh --bundle failed"
    exit 1
fi
echo "$out" | tail -n 1

# 2. A root with glibc and dash only.
mkdir -p "$root"/{proc,sys,dev,tmp,opt,etc}
chmod 1777 "$root/tmp"
dpkg -L libc6 dash | while read -r f; do
    [ -d "$f" ] && continue
    [ -e "$f" ] || [ -L "$f" ] || continue
    case "$f" in /usr/share/*) continue ;; esac
    cp -a --parents "$f" "$root/" 2>/dev/null
done
[ -e "$root/bin/sh" ] || ln -s dash "$root/bin/sh"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$root/etc/ld.so.conf"
ldconfig -r "$root" 2>/dev/null || true
for m in proc sys dev; do mount --rbind "/$m" "$root/$m" || { echo "FAIL: cannot bind /$m"; exit 1; }; done
tar -C "$root/opt" -xzf "$tmp/agent.tar.gz" || { echo "FAIL: the bundle does not unpack"; exit 1; }
name=$(ls "$root/opt")
b=/opt/$name
for t in python3 ldd; do
    if [ -e "$root/usr/bin/$t" ] || [ -e "$root/bin/$t" ]; then
        echo "FAIL: the test root has $t: it is not a bare root"; exit 1
    fi
done

chroot_bin=$(command -v chroot || echo /usr/sbin/chroot)
# run LABEL WANT_STATUS PATTERN -- CMD...: CMD inside the root.
run() {
    local label=$1 want=$2 pattern=$3
    shift 4
    local got st
    got=$(env -i PATH=/usr/bin:/bin HOME=/tmp TRAINCAST_PROGRESS=plain "$chroot_bin" "$root" "$@" 2>&1)
    st=$?
    if [ "$st" -ne "$want" ]; then
        fail "$label: exit $st, want $want:"; echo "$got" | tail -n 15
    elif ! grep -qE -- "$pattern" <<<"$got"; then
        fail "$label: output lacks /$pattern/:"; echo "$got" | tail -n 15
    else
        echo "ok: $label"
    fi
    last=$got
    [ -z "${TC_BUNDLE_TEST_VERBOSE:-}" ] || echo "$got"
}

run "agent --version" 0 '^agent \(traincast\) [0-9]' -- "$b/bin/agent" --version
run "agent info" 0 'devices:' -- "$b/bin/agent" info
grep -qE '^  cpu +[A-Za-z].*\[tcmalloc' <<<"$last" || fail "agent info: no cpu device measured with the bundle's tcmalloc: $(grep -E '^  cpu' <<<"$last" | tr '\n' ' ')"
if grep -q 'built without CUDA' <<<"$last"; then
    echo "note: this build has no CUDA backend; its cuDNN loading is not checked"
else
    grep -qE '^  cuda +cuDNN not loaded \(cannot load cuDNN' <<<"$last" \
        || fail "agent info: the cuda library line does not say that no cuDNN could be loaded: $(grep -E '^  cuda' <<<"$last" | head -n 1)"
fi
run "model describe from the bundled exports" 0 '"convs"' -- \
    "$b/bin/agent" model describe torchvision:squeezenet1_1 --batch 2 --format json
run "a CPU conv benchmark" 0 'median' -- \
    "$b/bin/agent" bench-conv --device cpu --threads 1 --n 2 --c 16 --h 14 --w 14 --k 16 --r 3 --pad 1 --budget-ms 50
run "a GPU command without a driver" 1 'cuda:0' -- \
    "$b/bin/agent" bench-conv --device cuda:0 --n 2 --c 16 --h 14 --w 14 --k 16 --r 3 --pad 1
lines=$(grep -c . <<<"$last")
[ "$lines" -le 2 ] || fail "a GPU command without a driver: $lines lines, want one: $last"

# A glibc older than the bundle needs: one line, exit 2 (the launcher asks
# getconf, here a fake one in the root).
mkdir -p "$root/usr/local/bin"
printf '#!/bin/sh\necho "glibc 2.31"\n' >"$root/usr/local/bin/getconf"
chmod +x "$root/usr/local/bin/getconf"
got=$(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp "$chroot_bin" "$root" "$b/bin/agent" --version 2>&1)
st=$?
if [ "$st" -eq 2 ] && [ "$(grep -c . <<<"$got")" -eq 1 ] && grep -q 'needs glibc 2\.[0-9]* or newer; this machine has glibc 2.31' <<<"$got"; then
    echo "ok: too old a glibc is refused in one line"
else
    fail "too old a glibc: exit $st: $got"
fi

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "the bundle runs in a root with glibc and a shell only"
