#!/usr/bin/env python3
"""The software a CPU device measures with, as traincast identifies it.

A CPU device is the processor, its thread count, the memory allocator,
the BLAS the framework calls and the framework's version. The agent
(agent/devices/allocator.c, agent/devices/cpu/cpu_blas.c) and the trace runner describe the
allocator and the BLAS with the same words, so a trace whose runner did not
run with the device's allocator and BLAS is refused, not stored under it.

As a module: ensure_allocator(), describe_allocator(), loaded_blas(),
describe_blas(). As a program (`cpu_env.py --probe [--allocator NAME]`):
prints one JSON line with the framework, allocator and BLAS that PyTorch
runs with here, and PyTorch's time for a batched matmul on its split path
(bmm_split_ms), for the agent's CPU device (exit 0), or an "error" line
(exit 1).
"""

import ctypes
import ctypes.util
import json
import os
import re
import sys

# name: (library to preload or None, Debian package, environment).
# Kept equal to s_allocs in agent/devices/allocator.c.
ALLOCATORS = {
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", {}),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2", {
        "MALLOC_CONF": "oversize_threshold:1,background_thread:true,metadata_thp:auto,"
                       "dirty_decay_ms:-1,muzzy_decay_ms:-1"}),
    "glibc-tuned": (None, "libc6", {"MALLOC_MMAP_MAX_": "0",
                                    "MALLOC_TRIM_THRESHOLD_": "4000000000"}),
    "system": (None, "libc6", {}),
}
DEFAULT_ALLOCATOR = "tcmalloc"
_REEXEC = "TRAINCAST_ALLOCATOR_REEXEC"


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("dlpi_addr", ctypes.c_void_p), ("dlpi_name", ctypes.c_char_p)]


def _malloc_object():
    """The shared object whose malloc this process calls: the first object
    in the dynamic linker's search order (the program aside, whose entry is
    only a stub) that defines malloc itself."""
    me = ctypes.CDLL(None)
    names = []
    callback_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t,
                                  ctypes.c_void_p)

    def collect(info, size, data):
        name = info.contents.dlpi_name
        names.append(name.decode(errors="replace") if name else "")
        return 0

    me.dl_iterate_phdr(callback_t(collect), None)
    dladdr = me.dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    for name in names[1:]:
        if not name or not os.path.isabs(name):
            continue
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            addr = ctypes.cast(lib.malloc, ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
        info = _DlInfo()
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname and \
                os.path.realpath(info.dli_fname.decode()) == os.path.realpath(name):
            return name
    return ""


def _glibc_tuned():
    try:
        trim = float(os.environ.get("MALLOC_TRIM_THRESHOLD_", "0"))
    except ValueError:
        trim = 0
    return os.environ.get("MALLOC_MMAP_MAX_") == "0" and trim >= 1e9


def describe_allocator():
    """'tcmalloc 2.10', 'jemalloc 5.3.0 decay -1/-1', 'glibc 2.36' or
    'glibc 2.36 tuned': the allocator this process allocates with."""
    obj = _malloc_object()
    base = os.path.basename(obj)
    me = ctypes.CDLL(None)
    if "tcmalloc" in base:
        major, minor, patch = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_char_p(b"")
        try:
            fn = me.tc_version
            fn.restype = ctypes.c_char_p
            fn(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
        except AttributeError:
            pass
        return "tcmalloc %d.%d%s" % (major.value, minor.value,
                                     (patch.value or b"").decode())
    if "jemalloc" in base:
        version, dirty, muzzy = "?", 0, 0
        try:
            ctl = me.mallctl
            ctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                            ctypes.c_void_p, ctypes.c_size_t]
            v = ctypes.c_char_p()
            size = ctypes.c_size_t(ctypes.sizeof(v))
            if ctl(b"version", ctypes.byref(v), ctypes.byref(size), None, 0) == 0 and v.value:
                version = v.value.decode().split("-")[0]
            for key in ("dirty", "muzzy"):
                d = ctypes.c_ssize_t(0)
                size = ctypes.c_size_t(ctypes.sizeof(d))
                ctl(("opt.%s_decay_ms" % key).encode(), ctypes.byref(d), ctypes.byref(size),
                    None, 0)
                if key == "dirty":
                    dirty = d.value
                else:
                    muzzy = d.value
        except AttributeError:
            pass
        return "jemalloc %s decay %d/%d" % (version, dirty, muzzy)
    if "libc.so" in base or base.startswith("libc-"):
        fn = me.gnu_get_libc_version
        fn.restype = ctypes.c_char_p
        return "glibc %s%s" % (fn().decode(), " tuned" if _glibc_tuned() else "")
    return base or "unknown allocator"


def _active(name):
    lib = ALLOCATORS[name][0]
    obj = _malloc_object()
    if lib:
        return lib in obj or name in os.path.basename(obj)
    if name == "glibc-tuned":
        return "libc.so" in obj and _glibc_tuned()
    return True


def _locate(lib):
    dirs = []
    for line in open("/proc/self/maps"):
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if re.search(r"/libc\.so", path):
            dirs.append(os.path.dirname(path))
            break
    dirs += ["/usr" + d for d in dirs if not d.startswith("/usr/")]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
             "/usr/lib", "/usr/local/lib"]
    for d in dirs:
        p = os.path.join(d, lib)
        if os.access(p, os.R_OK):
            return p
    return ""


def ensure_allocator(name, explicit, fail):
    """Run this program with allocator `name`: re-execute it once with the
    library in LD_PRELOAD (and its settings) unless it is already in use.
    `fail(message)` reports what cannot be done and does not return."""
    if name not in ALLOCATORS:
        fail("--allocator: unknown allocator %r; choose %s" % (name, ", ".join(ALLOCATORS)))
    if name == "system" or _active(name):
        return
    lib, package, env = ALLOCATORS[name]
    if os.environ.get(_REEXEC) == name:
        fail("--allocator %s: started again with it in LD_PRELOAD, but it is not the allocator "
             "in use" % name)
    path = _locate(lib) if lib else ""
    if lib and not path:
        if explicit:
            fail("--allocator %s: %s is not installed; install the Debian package %s, or choose "
                 "--allocator system" % (name, lib, package))
        sys.stderr.write("warning: the default allocator %s is not installed (Debian package "
                         "%s); running with the system allocator\n" % (name, package))
        return
    new_env = dict(os.environ)
    if path:
        old = new_env.get("LD_PRELOAD", "")
        new_env["LD_PRELOAD"] = path + (":" + old if old else "")
    new_env.update(env)
    new_env[_REEXEC] = name
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, new_env)


def loaded_blas():
    """The path of the BLAS library mapped into this process (what PyTorch
    calls for its native convolutions and matrix products), or ''."""
    found = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            path = parts[5].strip()
            base = os.path.basename(path)
            for key in ("libblas.so", "libopenblas", "libmkl_rt", "libblis"):
                if base.startswith(key) and key not in found:
                    found[key] = path
    for key in ("libblas.so", "libopenblas", "libmkl_rt", "libblis"):
        if key in found:
            return os.path.realpath(found[key])
    return ""


def describe_blas(path):
    """'OpenBLAS 0.3.21 openmp', 'BLIS 0.9.0', 'MKL 2020.0.4', 'reference BLAS
    3.11.0': the BLAS at `path`, as agent/devices/cpu/cpu_blas.c names it."""
    if not path:
        return "none"
    lib = ctypes.CDLL(path)
    if hasattr(lib, "openblas_get_config"):
        lib.openblas_get_config.restype = ctypes.c_char_p
        words = (lib.openblas_get_config() or b"").decode().split()
        version = words[1] if len(words) > 1 else "?"
        mode = ""
        if hasattr(lib, "openblas_get_parallel"):
            mode = {0: " sequential", 1: " pthreads", 2: " openmp"}.get(
                lib.openblas_get_parallel(), "")
        return "OpenBLAS %s%s" % (version, mode)
    if hasattr(lib, "bli_info_get_version_str"):
        lib.bli_info_get_version_str.restype = ctypes.c_char_p
        return "BLIS %s" % lib.bli_info_get_version_str().decode()
    if hasattr(lib, "MKL_Get_Version_String"):
        buf = ctypes.create_string_buffer(256)
        lib.MKL_Get_Version_String(buf, 256)
        m = re.search(r"(\d+(\.\d+)+)", buf.value.decode(errors="replace"))
        return "MKL %s" % (m.group(1) if m else "?")
    base = os.path.basename(path)
    if "atlas" in path:
        return "ATLAS"
    m = re.match(r"libblas\.so\.(\d+(\.\d+)*)$", base)
    return "reference BLAS %s" % (m.group(1) if m else "?")


# The batched matmul the probe times (products of m x k by k x n): over
# baddbmm's 400 multiply-accumulates, so PyTorch 1.13 without MKL runs it on
# bmm_out_or_baddbmm_'s split path, and so small that its sgemm_ calls are a
# small part of the time; the agent times its own loop on the same config
# (agent/devices/cpu/cpu_matmul.c) and takes the difference per product.
BMM_SPLIT = {"count": 512, "m": 8, "n": 8, "k": 8}


def bmm_split_ms(torch, blocks=6, reps=15, warmup=3):
    """PyTorch's own time for one torch.bmm of BMM_SPLIT, on one thread
    (the split loop is serial), in ms: the fastest call of `blocks` blocks,
    each on operands newly allocated (the earlier ones kept, so that each
    lands elsewhere). The cost is a fixed amount of work that the machine
    can only lengthen, and a 2-vCPU VM lengthens it by up to 1.9x in phases
    that last from a few calls to seconds (its host's load), so no one
    stretch of calls or one set of operands decides it. None where PyTorch
    has MKL, whose batched call has no split loop. The agent times its
    own loop the same way (agent/devices/cpu/cpu_matmul.c)."""
    import time
    if torch.backends.mkl.is_available():
        return None
    c = BMM_SPLIT
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    held, best = [], None
    try:
        for _ in range(blocks):
            a = torch.randn(c["count"], c["m"], c["k"])
            b = torch.randn(c["count"], c["k"], c["n"])
            held.append((a, b))
            for i in range(warmup + reps):
                t0 = time.perf_counter()
                torch.bmm(a, b)
                t = time.perf_counter() - t0
                if i >= warmup and (best is None or t < best):
                    best = t
    finally:
        torch.set_num_threads(threads)
    return best * 1e3


def _probe(argv):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--probe", action="store_true", required=True)
    p.add_argument("--allocator", default=os.environ.get("TRAINCAST_TRACE_ALLOCATOR", ""))
    a = p.parse_args(argv)

    def fail(message):
        print(json.dumps({"type": "error", "message": message}))
        sys.exit(1)

    if a.allocator:
        ensure_allocator(a.allocator, True, fail)
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - reported on the protocol
        out.write(json.dumps({"type": "error", "message": "import torch: %s" % e}) + "\n")
        return 1
    blas_path = loaded_blas()
    out.write(json.dumps({
        "type": "probe",
        "framework": "pytorch",
        "framework_version": torch.__version__,
        "mkldnn": bool(torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled),
        "allocator": describe_allocator(),
        "blas": describe_blas(blas_path),
        "blas_path": blas_path,
        "bmm_split": dict(BMM_SPLIT, ms=bmm_split_ms(torch)),
    }) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_probe(sys.argv[1:]))
