#!/usr/bin/env bash
# test_package_install.sh BUILD_DIR PG_DIR [PACKAGES_DIR]
#
# Each Debian package of the build (cpack -G DEB) installs with dpkg into a
# clean root that holds only what it declares, and runs there:
#   traincast-agent-cpu   --version; info (no GPU backend, a CPU device);
#                         model describe of a torchvision CNN from the
#                         installed exports; a CPU conv benchmark (oneDNN);
#                         and nothing of CUDA in the binary or in Depends
#   traincast-agent       (a build with CUDA) --version; info; model describe
#   traincast-aggregator  --version; keygen; migrate, fit and predict of
#                         torchvision:resnet50 in a database of the test
#                         PostgreSQL (PG_DIR) holding one synthetic device,
#                         the CNN named and loaded from the installed
#                         exports alone
# The root: the Essential packages of Debian and the closure of the
# package's Depends and Pre-Depends, taken from the packages installed on
# this machine (every dependency of a program built here is installed here;
# apt's cache holds only some of their .debs, and debootstrap needs a
# mirror), each with its files (dpkg -L, without docs, man pages and
# locales) and its entry in the root's dpkg database; then `dpkg --root -i`
# installs traincast-common and the package there, checking its Depends and
# running its postinst, and the programs run chrooted, with no PATH, library
# or file of this machine beyond those. A library the package links but
# does not depend on is absent, and the program fails to start: the last
# check shows it, with a root made from the aggregator's Depends less one.
# The packages are those test_packages.sh left in PACKAGES_DIR (ctest runs
# it first), else made here with cpack. Needs root, or user namespaces
# (unshare -r), and dpkg; skipped (77) otherwise.
set -uo pipefail

build=${1:?usage: test_package_install.sh BUILD_DIR PG_DIR}
pg_dir=${2:?usage: test_package_install.sh BUILD_DIR PG_DIR}
case "$build" in /*) ;; *) build=$PWD/$build ;; esac
case "$pg_dir" in /*) ;; *) pg_dir=$PWD/$pg_dir ;; esac

for tool in cpack dpkg dpkg-deb dpkg-query ldconfig readelf python3 tar; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
chroot_bin=$(command -v chroot || echo /usr/sbin/chroot)
[ -x "$chroot_bin" ] || { echo "skipped: chroot is not installed"; exit 77; }

# Root, or root in a user namespace of our own, with a private mount table.
if [ -z "${TC_PKG_TEST_NS:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        ns=(unshare -m --propagation private)
    else
        ns=(unshare -r -m --propagation private)
    fi
    if ! "${ns[@]}" true 2>/dev/null; then
        echo "skipped: cannot make a private mount namespace here (${ns[*]} failed): the packages are not installed"
        exit 77
    fi
    TC_PKG_TEST_NS=1 exec "${ns[@]}" "$0" "$@"
fi

repo=$(cd "$(dirname "$0")/../.." && pwd)
# The prefix the build installs to (/usr for deploy/package.sh).
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
work=$(mktemp -d)
roots=()
# drop_root ROOT: a root whose checks are done goes (a few hundred MB each),
# its /proc, /sys and /dev unbound first: never remove into one still bound.
drop_root() {
    local m
    for m in proc sys dev; do umount -l "$1/$m" 2>/dev/null || true; done
    rm -rf --one-file-system "$1"
}
cleanup() {
    local r
    for r in "${roots[@]}"; do drop_root "$r"; done
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# 1. The packages of this build.
out=${3:-}
if [ -z "$out" ] || ! ls "$out"/traincast-common_*.deb >/dev/null 2>&1; then
    out=$work/out
    (cd "$build" && cpack -G DEB -D CPACK_OUTPUT_FILE_PREFIX="$out" -B "$work/cpack" \
        >"$work/cpack.log" 2>&1) \
        || { tail -n 20 "$work/cpack.log"; echo "FAIL: cpack"; exit 1; }
fi
deb() { ls "$out"/"$1"_*.deb 2>/dev/null | head -n 1; }
common=$(deb traincast-common)
[ -n "$common" ] || { echo "FAIL: no traincast-common package: $(ls "$out")"; exit 1; }

# The host packages a root needs for DEPENDS (one field's text per argument):
# the Essential set and the closure of the dependencies over the packages
# installed here, the first installed alternative of each (or an installed
# provider of a virtual one), as NAME:ARCH of this machine's architecture.
# traincast-* are the packages under test. An alternative that nothing
# installed here satisfies fails the test.
closure() {
    python3 - "$@" <<'EOF'
import re, subprocess, sys
native = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                        check=True).stdout.strip()
fields = ("${Package}\t${Architecture}\t${db:Status-Status}\t${Essential}\t"
          "${Pre-Depends}, ${Depends}\t${Provides}\n")
out = subprocess.run(["dpkg-query", "-W", "-f", fields], capture_output=True, text=True,
                     check=True).stdout
installed, provides, arch = {}, {}, {}
for line in out.splitlines():
    name, a, status, essential, deps, prov = line.split("\t")
    if status != "installed" or a not in (native, "all"):
        continue
    installed[name] = (essential == "yes", deps)
    arch[name] = a
    for p in prov.split(","):
        if p.strip():
            provides.setdefault(re.split(r"[ (]", p.strip())[0], []).append(name)

def groups(text):
    for group in text.split(","):
        names = [re.split(r"[ (:]", a.strip())[0] for a in group.split("|") if a.strip()]
        if names:
            yield names

def resolve(names):
    for n in names:
        if n.startswith("traincast-"):
            return ""
        if n in installed:
            return n
        if n in provides:
            return provides[n][0]
    sys.exit("no installed package satisfies '%s'" % " | ".join(names))

todo = [n for n, (essential, _) in installed.items() if essential]
for text in sys.argv[1:]:
    todo += [resolve(g) for g in groups(text)]
seen = set()
while todo:
    n = todo.pop()
    if not n or n in seen:
        continue
    seen.add(n)
    todo += [resolve(g) for g in groups(installed[n][1])]
print("\n".join(sorted("%s:%s" % (n, arch[n]) for n in seen)))
EOF
}

# make_root ROOT DEPENDS...: the root of those packages, its dpkg database,
# /etc/passwd and the dynamic linker's cache; /proc, /sys and /dev bound in.
make_root() {
    local root=$1 p d
    shift
    mkdir -p "$root"
    roots+=("$root")
    closure "$@" >"$root.pkgs" || return 1
    for d in bin sbin lib lib64; do
        if [ -L "/$d" ]; then
            mkdir -p "$root/usr/$d"
            ln -s "usr/$d" "$root/$d"
        fi
    done
    xargs dpkg-query -L <"$root.pkgs" 2>/dev/null \
        | grep -vE '^/usr/share/(doc|man|info|locale|lintian|bug)/' | sort -u \
        | while IFS= read -r p; do
            [ -d "$p" ] && [ ! -L "$p" ] && continue
            [ -e "$p" ] || [ -L "$p" ] || continue
            printf '%s\n' "${p#/}"
        done >"$root.files"
    tar -C / --no-recursion --ignore-failed-read --verbatim-files-from -T "$root.files" -cf - 2>/dev/null \
        | tar -C "$root" --keep-directory-symlink -xf - || return 1
    mkdir -p "$root"/var/lib/dpkg/{info,updates,triggers} "$root"/{proc,sys,dev,tmp,run} \
        "$root/var/log" "$root/etc"
    chmod 1777 "$root/tmp"
    : >"$root/var/lib/dpkg/available"
    while IFS= read -r p; do
        dpkg-query -s "$p"
        echo
        for d in /var/lib/dpkg/info/"${p%%:*}".list /var/lib/dpkg/info/"$p".list; do
            [ -f "$d" ] && cp "$d" "$root/var/lib/dpkg/info/"
        done
    done <"$root.pkgs" >"$root/var/lib/dpkg/status"
    # What the postinsts of base-passwd and dash make, not their packages.
    cp "$root/usr/share/base-passwd/passwd.master" "$root/etc/passwd"
    cp "$root/usr/share/base-passwd/group.master" "$root/etc/group"
    [ -e "$root/bin/sh" ] || ln -s dash "$root/bin/sh"
    ldconfig -r "$root" 2>/dev/null || true
    for d in proc sys dev; do mount --rbind "/$d" "$root/$d" || return 1; done
}

# install_debs ROOT DEB...: dpkg into the root, its dependency checks and postinst.
install_debs() {
    local root=$1
    shift
    if ! dpkg --root="$root" --log=/dev/null --force-unsafe-io -i "$@" >"$root.dpkg" 2>&1; then
        fail "dpkg -i $(basename -a "$@" | tr '\n' ' ')into a clean root: $(tail -n 15 "$root.dpkg")"
        return 1
    fi
}

# install_clean ROOT DEB: a root of the Essential set and DEB's declared
# dependencies, with traincast-common and DEB installed by dpkg.
install_clean() {
    local root=$1 deb=$2
    if ! make_root "$root" "$(dpkg-deb -f "$deb" Pre-Depends)" "$(dpkg-deb -f "$deb" Depends)"; then
        fail "cannot make a root of $(dpkg-deb -f "$deb" Package)'s dependencies"
        return 1
    fi
    install_debs "$root" "$common" "$deb"
}

# run ROOT LABEL WANT_STATUS PATTERN -- CMD...: CMD inside the root, with
# nothing of this machine's environment.
run() {
    local root=$1 label=$2 want=$3 pattern=$4
    shift 5
    local st
    last=$(env -i PATH="$prefix/bin:/usr/bin:/usr/sbin" HOME=/tmp TRAINCAST_PROGRESS=plain \
        "$chroot_bin" "$root" "$@" 2>&1)
    st=$?
    if [ "$st" -ne "$want" ]; then
        fail "$label: exit $st, want $want:"
        echo "$last" | tail -n 15
    elif ! grep -qE -- "$pattern" <<<"$last"; then
        fail "$label: output lacks /$pattern/:"
        echo "$last" | tail -n 15
    else
        ok "$label"
    fi
}

# fill_db DSN: one synthetic device with the CNN set's conv benchmarks at
# batches 8 and 16 and six CNNs' traces, as bench/predict_latency.sh makes
# its databases.
fill_db() {
    local dsn=$1 gen=$build/bench/tc-gen-predict-db convs=$repo/tests/data/cnn_set.convs
    "$gen" --table devices --devices 1 | "$psql" -X -q "$dsn" -c "COPY devices (device_id, uuid, \
kind, name, host, gpu_index, compute_capability, multiprocessors, memory_bytes, clock_mhz, \
memory_clock_mhz, driver_version, runtime_version, library, library_version) FROM STDIN" || return 1
    "$gen" --table configs --convs "$convs" \
        | "$psql" -X -q "$dsn" -c "COPY conv_configs ($("$gen" --table configs --columns)) FROM STDIN" \
        || return 1
    "$gen" --table results --devices 1 --batches 8,16 --convs "$convs" | "$psql" -X -q "$dsn" -c \
        "COPY conv_results (message_id, seq, device_id, config_id, batch, direction, policy, \
backend, algo, algo_id, median_ms, min_ms, max_ms, stddev_ms, repetitions, workspace_bytes, \
measured_at, library_version, samples_ms, sample_offsets_us) FROM STDIN" || return 1
    "$psql" -X -q "$dsn" -c "SELECT setval('devices_device_id_seq', (SELECT max(device_id) FROM devices))" \
        >/dev/null || return 1
    "$gen" --traces --db "$dsn" --devices 1 --batches 8,16 --trace-batches 8,16 \
        --models-dir "$repo/tests/data"
}

# 2. The CPU agent: nothing of CUDA, and it runs.
cpu=$(deb traincast-agent-cpu)
if [ -z "$cpu" ]; then
    fail "no traincast-agent-cpu package: $(ls "$out")"
else
    depends=$(dpkg-deb -f "$cpu" Pre-Depends Depends | sed 's/^[A-Za-z-]*: //' | paste -sd, -)
    if grep -qiE 'cuda|cudnn|cublas|nvidia|nvrtc' <<<"$depends"; then
        fail "traincast-agent-cpu depends on CUDA: $depends"
    else
        ok "traincast-agent-cpu depends on nothing of CUDA: $depends"
    fi
    dpkg-deb -x "$cpu" "$work/cpu-x"
    needed=$(readelf -d "$work/cpu-x$prefix/bin/agent" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ' -)
    if grep -qiE 'cuda|cudnn|cublas|nvrtc|nvml' <<<"$needed" \
        || grep -qaE 'cuInit|cudaMalloc|cudaGetDeviceCount' "$work/cpu-x$prefix/bin/agent"; then
        fail "the CPU agent links or loads CUDA: $needed"
    else
        ok "the CPU agent has nothing of CUDA (needs $needed)"
    fi
    root=$work/agent-cpu
    if install_clean "$root" "$cpu"; then
        ok "traincast-agent-cpu installs into a root of $(wc -l <"$root.pkgs") packages"
        for t in nvidia-smi python3-torch; do
            grep -q "^$t:" "$root.pkgs" && fail "the root is not clean: it has $t"
        done
        run "$root" "agent-cpu: agent --version" 0 '^agent \(traincast\) [0-9]' -- agent --version
        run "$root" "agent-cpu: agent info" 0 'built without CUDA' -- agent info
        grep -qE '^  cpu ' <<<"$last" || fail "agent-cpu: agent info lists no cpu device: $last"
        run "$root" "agent-cpu: model describe from the installed exports" 0 '"convs"' -- \
            agent model describe torchvision:resnet50 --batch 2 --format json
        run "$root" "agent-cpu: a CPU conv benchmark" 0 'median' -- \
            agent bench-conv --device cpu --threads 1 --n 2 --c 16 --h 14 --w 14 --k 16 --r 3 \
            --pad 1 --budget-ms 50
        run "$root" "agent-cpu: a GPU command says which package measures GPUs" 1 'traincast-agent' -- \
            agent bench-conv --device cuda:0 --n 2 --c 16 --h 14 --w 14 --k 16 --r 3 --pad 1
        getent_out=$("$chroot_bin" "$root" getent passwd traincast)
        [ -n "$getent_out" ] && ok "agent-cpu: the postinst made the traincast user" \
            || fail "agent-cpu: no traincast user after the postinst"
    fi
    drop_root "$root"
fi

# 3. The GPU agent, where the build has CUDA: it starts without any of it.
gpu=$(deb traincast-agent)
if [ -n "$gpu" ]; then
    root=$work/agent
    if install_clean "$root" "$gpu"; then
        ok "traincast-agent installs into a root of $(wc -l <"$root.pkgs") packages"
        run "$root" "agent: agent --version" 0 '^agent \(traincast\) [0-9]' -- agent --version
        run "$root" "agent: agent info without a driver or cuDNN" 0 'devices:' -- agent info
        grep -qE '^  cuda ' <<<"$last" || fail "agent: agent info has no cuda line: $last"
        run "$root" "agent: model describe from the installed exports" 0 '"convs"' -- \
            agent model describe torchvision:squeezenet1_1 --batch 2 --format json
    fi
    drop_root "$root"
else
    echo "note: this build has no CUDA backend: no traincast-agent package to install"
fi

# 4. The aggregator: keys, and a prediction that needs nothing but the
# package and a database.
agg=$(deb traincast-aggregator)
admin_dsn=$(head -n 1 "$pg_dir/dsn" 2>/dev/null)
psql=$(command -v psql || printf '%s\n' /usr/lib/postgresql/*/bin/psql | sort -V | tail -n 1)
db=tc_pkg_$$
if [ -z "$agg" ]; then
    fail "no traincast-aggregator package: $(ls "$out")"
else
    root=$work/aggregator
    if install_clean "$root" "$agg"; then
        ok "traincast-aggregator installs into a root of $(wc -l <"$root.pkgs") packages"
        run "$root" "aggregator --version" 0 '^aggregator \(traincast\) [0-9]' -- aggregator --version
        run "$root" "aggregator keygen" 0 '' -- aggregator keygen --keys /tmp/keys
        [ -s "$root/tmp/keys/aggregator.key" ] || [ -n "$(ls "$root/tmp/keys" 2>/dev/null)" ] \
            || fail "aggregator keygen wrote no keys"
        if [ -z "$admin_dsn" ] || [ ! -x "$psql" ]; then
            fail "no test PostgreSQL in $pg_dir (fixture pg_start) or no psql: predict is not checked"
        elif "$psql" -X -q "$admin_dsn" -c "CREATE DATABASE $db" >/dev/null; then
            dsn=${admin_dsn%/*}/$db
            run "$root" "aggregator migrate" 0 '' -- aggregator migrate --db "$dsn"
            # A device's conv benchmarks of the CNN set and traces of six of
            # its CNNs, synthetic (bench/gen_predict_db.c, from this build).
            if fill_db "$dsn" >"$work/fill.log" 2>&1; then
                run "$root" "aggregator fit" 0 'Synthetic GPU 01' -- aggregator fit --db "$dsn" --no-validate
                run "$root" "aggregator predict torchvision:resnet50 from the installed exports" 0 \
                    'Synthetic GPU 01 +8 ' -- aggregator predict --gpu all --model torchvision:resnet50 \
                    --batch 8,16 --wait 0 --no-store --db "$dsn"
                grep -q 'resnet50 (torchvision:resnet50' <<<"$last" \
                    || fail "aggregator predict does not name resnet50: $last"
            else
                fail "cannot fill the database: $(tail -n 5 "$work/fill.log")"
            fi
            "$psql" -X -q "$admin_dsn" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
        else
            fail "cannot create the database $db"
        fi
    fi
    drop_root "$root"

    # 5. The test itself: a Depends less one of the libraries the aggregator
    # links leaves that library out of the root, and the program cannot
    # start there.
    lib=$(readelf -d "$build/aggregator/aggregator" | sed -n 's/.*(NEEDED).*\[\(libzmq[^]]*\)\]/\1/p')
    owner=$(dpkg-query -S "*/$lib" 2>/dev/null | head -n 1 | cut -d: -f1)
    if [ -z "$lib" ] || [ -z "$owner" ]; then
        fail "cannot find the package of the aggregator's libzmq"
    else
        less=$(dpkg-deb -f "$agg" Depends | tr ',' '\n' | grep -vE "^ *$owner( |$)" | paste -sd, -)
        root=$work/aggregator-less
        if ! make_root "$root" "$less"; then
            fail "cannot make a root of the aggregator's dependencies less $owner"
        elif install_debs "$root" "$common" && dpkg-deb -x "$agg" "$root"; then
            run "$root" "a root without $owner: the aggregator does not start" 127 "$lib" -- \
                aggregator --version
        fi
        drop_root "$root"
    fi
fi

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "every package installs into a root of its declared dependencies and runs there"
