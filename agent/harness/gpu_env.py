#!/usr/bin/env python3
"""PyTorch on a GPU as traincast measures it.

As a module (the trace runner imports it):
  conv_settings(torch)  every framework flag and environment variable that
                        changes what a convolution computes or how fast, as
                        {name: value} strings (names "torch.backends.cudnn.
                        allow_tf32", "env.TORCH_CUDNN_V8_API_DISABLED", ...)
  apply_dtype(torch, d) the conv and matmul precision flags for a traincast
                        dtype: fp32 leaves PyTorch's defaults, fp32_strict
                        turns TF32 off, tf32 turns it on
  loaded_libraries()    the CUDA libraries (cuDNN, cuBLAS, cuBLASLt, NVRTC,
                        the CUDA runtime) mapped into this process
  cudnn_library()       the libcudnn mapped into this process
  Spin(torch, device)   a kernel that keeps the GPU busy for a given time
  Nvml(index)           SM clock and board power through libnvidia-ml

As a program:
  gpu_env.py --probe [--device cuda:I]
      one JSON line {"type": "probe", ...}: the framework version, whether
      it sees the GPU, the cuDNN it loads (version and directory), the CUDA
      libraries it loaded ("libraries": {"cudnn": PATH, "nvrtc": PATH, ...}),
      the device's compute capability and the conv settings; exit 0. Without
      PyTorch an {"type": "error"} line and exit 1.
  gpu_env.py --serve --device cuda:I|cpu
      PyTorch runs convolutions for the agent (agent/devices/fw_conv.h): one JSON
      request per line on stdin, one JSON answer per line on stdout.
        {"op": "select", "conv": C}   -> {"type": "select", "backend": B}
        {"op": "plan", "conv": C, "direction": D, "seed": S}
                                      -> {"type": "plan", "backend": B, "buffers": R}
        {"op": "run"}                 -> {"type": "run", "ms": T}
        {"op": "read", "tensor": "y"} -> {"type": "read", "count": N, "f32": BASE64}
        {"op": "release"}             -> {"type": "release"}  (frees the plan's memory)
        {"op": "quit"}
      C holds n c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups
      bias dtype layout; B is PyTorch's own choice of backend
      (torch._C._select_conv_backend: "Cudnn", "CudaDepthwise2d", "Slow2d",
      ...). "run" calls the op PyTorch's autograd calls for that direction
      (aten::convolution, aten::convolution_backward with the direction's
      output mask) once: on a GPU between CUDA events, after a spin kernel
      of SPIN_MS that keeps the GPU busy while the host enqueues (no launch
      overhead in the sample: convolution_backward alone spends tens of
      microseconds on the host), with the inputs rotated through copies that together
      exceed the L2 cache. Any failure answers {"type": "error", "message"}.
"""

import argparse
import base64
import ctypes
import json
import math
import os
import sys
import time

# Environment variables that change which path a conv takes, how cuDNN
# picks its algorithm, or the math it may use.
CONV_ENV = [
    "TORCH_CUDNN_V8_API_ENABLED",        # 1.13: the v8 (graph) API on
    "TORCH_CUDNN_V8_API_DISABLED",       # 2.x: the v8 API off
    "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT",
    "TORCH_CUDNN_USE_HEURISTIC_MODE_B",  # v8 heuristics mode B instead of instant
    "TORCH_CUDNN_V8_API_DEBUG",
    "NVIDIA_TF32_OVERRIDE",              # 0: no TF32 whatever the framework allows
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUDNN_CONV_WSCAP_DBG",              # caps cuDNN's workspace (MiB)
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_MODULE_LOADING",
    "DNNL_MAX_CPU_ISA",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_DEFAULT_FPMATH_MODE",
    "ONEDNN_DEFAULT_FPMATH_MODE",
]


def _get(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def conv_settings(torch):
    """{name: str(value)} of every conv-relevant flag this PyTorch has, and
    of the environment variables above (empty when unset)."""
    out = {}
    flags = [
        "backends.cudnn.enabled", "backends.cudnn.benchmark", "backends.cudnn.deterministic",
        "backends.cudnn.allow_tf32", "backends.cudnn.benchmark_limit",
        "backends.cuda.matmul.allow_tf32", "backends.mkldnn.enabled",
        # The precision API of 2.9 and later.
        "backends.fp32_precision", "backends.cudnn.fp32_precision",
        "backends.cudnn.conv.fp32_precision", "backends.cuda.matmul.fp32_precision",
    ]
    for f in flags:
        try:
            out["torch." + f] = str(_get(torch, f))
        except (AttributeError, AssertionError, RuntimeError):
            pass  # not in this version
    for name, fn in (("torch.get_float32_matmul_precision", "get_float32_matmul_precision"),
                     ("torch.are_deterministic_algorithms_enabled",
                      "are_deterministic_algorithms_enabled")):
        if hasattr(torch, fn):
            try:
                out[name] = str(getattr(torch, fn)())
            except RuntimeError:
                pass
    for var in CONV_ENV:
        out["env." + var] = os.environ.get(var, "")
    return dict(sorted(out.items()))


def apply_dtype(torch, dtype):
    """fp32: PyTorch's defaults, untouched (cuDNN may use TF32 on compute
    capability 8.0 and up, matmuls stay full fp32); fp32_strict: TF32 off
    for convs and matmuls; tf32: TF32 on for both."""
    if dtype not in ("fp32_strict", "tf32"):
        return
    allow = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = allow
    torch.backends.cuda.matmul.allow_tf32 = allow


# The CUDA libraries PyTorch loads that decide which cuDNN engines can run
# (runtime-compiled engines need NVRTC, some need cuBLASLt), by the prefix
# of their file names: the agent loads the same files (cuda_libs.c).
CUDA_LIBRARIES = (("cudnn", "libcudnn.so"), ("cublasLt", "libcublasLt.so"),
                  ("cublas", "libcublas.so"), ("nvrtc", "libnvrtc.so"),
                  ("cudart", "libcudart.so"))


def loaded_libraries():
    """{name: real path} of the CUDA_LIBRARIES mapped into this process."""
    found = {}
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path)
                for name, prefix in CUDA_LIBRARIES:
                    if name not in found and base.startswith(prefix):
                        found[name] = os.path.realpath(path)
    except OSError:
        pass
    return found


def cudnn_library():
    """The libcudnn.so* mapped into this process ('' when none is)."""
    return loaded_libraries().get("cudnn", "")


def cudnn_version(torch):
    v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if not v:
        return "", 0
    if v >= 90000:
        return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100), v
    return "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100), v


class Nvml:
    """SM clock (MHz) and board power (W) of one GPU through libnvidia-ml;
    every method returns None when NVML is not there."""

    def __init__(self, index=0, uuid=""):
        self.dev = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            if self.lib.nvmlInit_v2() != 0:
                return
            dev = ctypes.c_void_p()
            if uuid and self.lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(dev)) == 0:
                self.dev = dev
            elif self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(dev)) == 0:
                self.dev = dev
        except (OSError, AttributeError):
            self.dev = None

    def sm_clock_mhz(self):
        if self.dev is None:
            return None
        v = ctypes.c_uint(0)
        return v.value if self.lib.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(v)) == 0 else None

    def power_w(self):
        if self.dev is None:
            return None
        v = ctypes.c_uint(0)
        return v.value / 1000.0 if self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(v)) == 0 else None


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


# ---- the conv server --------------------------------------------------------------

def select_backend(torch, x, w, b, conv):
    """PyTorch's own choice for this conv (a name of torch._C._ConvBackend),
    or '' when this version cannot say."""
    fn = getattr(torch._C, "_select_conv_backend", None)
    if fn is None:
        return ""
    args = (x, w, b, [conv["stride_h"], conv["stride_w"]], [conv["pad_h"], conv["pad_w"]],
            [conv["dil_h"], conv["dil_w"]], False, [0, 0], conv["groups"])
    try:
        r = fn(*args)
    except TypeError:
        r = fn(*args, None)
    name = getattr(r, "name", None) or str(r)
    return name.split(".")[-1]


# How long the GPU is kept busy before each timed call: well past the host
# time of enqueuing one op and its two events (tens of microseconds for
# aten::convolution_backward, more on a busy host).
SPIN_MS = 1.0


class Spin:
    """torch.cuda._sleep for at least `ms` milliseconds of GPU time: the
    cycles per millisecond are measured once (the clock under load is not
    the one the device reports), then every call spins that long."""

    def __init__(self, torch, device, ms=SPIN_MS):
        self.torch = torch
        self.cycles = 0
        probe = 1 << 20
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(device):
            torch.cuda._sleep(probe)  # warm-up: clocks up, module loaded
            rates = []
            for _ in range(3):
                start.record()
                torch.cuda._sleep(probe)
                end.record()
                end.synchronize()
                rates.append(probe / max(start.elapsed_time(end), 1e-3))
        self.cycles = int(math.ceil(max(rates) * ms))

    def __call__(self):
        self.torch.cuda._sleep(self.cycles)


class Server:

    def __init__(self, torch, device):
        self.torch = torch
        self.dev = torch.device(device)
        self.cuda = self.dev.type == "cuda"
        self.plan = None
        if self.cuda:
            torch.cuda.set_device(self.dev)
            props = torch.cuda.get_device_properties(self.dev)
            self.l2 = getattr(props, "L2_cache_size", 0) or 64 << 20
            self.spin = Spin(torch, self.dev)
        else:
            self.l2 = 0

    def _dtype(self, name):
        t = self.torch
        return {"fp16": t.float16, "bf16": t.bfloat16}.get(name, t.float32)

    def _tensor(self, shape, dtype, layout, gen):
        t = self.torch
        v = t.rand(shape, generator=gen, device="cpu", dtype=t.float32) * 2 - 1
        v = v.to(device=self.dev, dtype=dtype)
        if layout == "nhwc" and len(shape) == 4:
            v = v.contiguous(memory_format=t.channels_last)
        return v

    def _shapes(self, c):
        p = (c["h"] + 2 * c["pad_h"] - c["dil_h"] * (c["r"] - 1) - 1) // c["stride_h"] + 1
        q = (c["w"] + 2 * c["pad_w"] - c["dil_w"] * (c["s"] - 1) - 1) // c["stride_w"] + 1
        return ([c["n"], c["c"], c["h"], c["w"]], [c["k"], c["c"] // c["groups"], c["r"], c["s"]],
                [c["n"], c["k"], p, q])

    def select(self, req):
        c = req["conv"]
        t = self.torch
        apply_dtype(t, c.get("dtype", "fp32"))
        xs, ws, _ = self._shapes(c)
        dt = self._dtype(c.get("dtype"))
        fmt = t.channels_last if c.get("layout") == "nhwc" else t.contiguous_format
        x = t.empty(xs, device=self.dev, dtype=dt).contiguous(memory_format=fmt)
        w = t.empty(ws, device=self.dev, dtype=dt).contiguous(memory_format=fmt)
        b = t.empty([c["k"]], device=self.dev, dtype=dt) if c.get("bias") else None
        backend = select_backend(t, x, w, b, c)
        del x, w, b
        self._empty_cache()
        return {"type": "select", "backend": backend}

    def _empty_cache(self):
        # The caching allocator would keep what this helper freed from the
        # agent's own plans (and their cuDNN workspace).
        if self.cuda:
            self.torch.cuda.empty_cache()

    def release(self):
        self.plan = None
        self._empty_cache()
        return {"type": "release"}

    def make_plan(self, req):
        t = self.torch
        self.plan = None
        self._empty_cache()
        c = req["conv"]
        d = req["direction"]
        apply_dtype(t, c.get("dtype", "fp32"))
        dt = self._dtype(c.get("dtype"))
        layout = c.get("layout", "nchw")
        gen = t.Generator().manual_seed(int(req.get("seed", 1)))
        xs, ws, ys = self._shapes(c)
        x = self._tensor(xs, dt, layout, gen)
        w = self._tensor(ws, dt, layout, gen)
        b = self._tensor([c["k"]], dt, "nchw", gen) if c.get("bias") else None
        # Rotate the inputs the direction reads through copies that exceed
        # the L2 cache together, as training never finds them there.
        read_elems = {"fwd": x.numel(), "bwd_data": math.prod(ys),
                      "bwd_filter": x.numel() + math.prod(ys)}[d]
        read_bytes = read_elems * x.element_size()
        copies = 1
        if self.cuda and read_bytes > 0:
            copies = max(1, min(16, math.ceil(2 * self.l2 / read_bytes)))
        sets = []
        for i in range(copies):
            if d == "fwd":
                xi = x if i == 0 else x.clone()
                sets.append((xi, None))
            else:
                dy = self._tensor(ys, dt, layout, gen)
                xi = x if i == 0 or d == "bwd_data" else x.clone()
                sets.append((xi, dy))
        stride = [c["stride_h"], c["stride_w"]]
        pad = [c["pad_h"], c["pad_w"]]
        dil = [c["dil_h"], c["dil_w"]]
        groups = c["groups"]
        conv = t.ops.aten.convolution
        back = t.ops.aten.convolution_backward
        bias_sizes = [c["k"]] if b is not None else None

        if d == "fwd":
            def op(s):
                return {"y": conv(s[0], w, b, stride, pad, dil, False, [0, 0], groups)}
        else:
            mask = [d == "bwd_data", d == "bwd_filter", d == "bwd_filter" and b is not None]

            def op(s):
                gi, gw, gb = back(s[1], s[0], w, bias_sizes, stride, pad, dil, False, [0, 0],
                                  groups, mask)
                return {"dx": gi, "dw": gw, "db": gb}
        self.plan = {"op": op, "sets": sets, "next": 0, "tensors": {"x": x, "w": w, "b": b},
                     "out": {}}
        if d != "fwd":
            self.plan["tensors"]["dy"] = sets[0][1]
        if self.cuda:
            self.plan["events"] = (t.cuda.Event(enable_timing=True),
                                   t.cuda.Event(enable_timing=True))
        return {"type": "plan", "backend": select_backend(t, x, w, b, c), "buffers": copies}

    def run(self):
        if self.plan is None:
            raise RuntimeError("run before plan")
        p = self.plan
        s = p["sets"][p["next"]]
        p["next"] = (p["next"] + 1) % len(p["sets"])
        if self.cuda:
            start, end = p["events"]
            self.spin()
            start.record()
            out = p["op"](s)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:
            t0 = time.perf_counter()
            out = p["op"](s)
            ms = (time.perf_counter() - t0) * 1e3
        if s is p["sets"][0]:
            p["out"] = out
        return {"type": "run", "ms": ms}

    def read(self, req):
        p = self.plan
        name = req["tensor"]
        if name not in p["tensors"] and not p["out"]:
            # A plan made again (another one ran in between) has not run yet.
            p["next"] = 0
            self.run()
        v = p["tensors"].get(name) if name in p["tensors"] else p["out"].get(name)
        if v is None:
            return {"type": "error", "message": "this plan has no tensor %s" % name}
        v = v.detach().float().contiguous().cpu()
        return {"type": "read", "count": v.numel(),
                "f32": base64.b64encode(v.numpy().astype("<f4").tobytes()).decode()}


def _serve(a):
    out = sys.stdout
    sys.stdout = sys.stderr

    def say(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - reported on the protocol
        say({"type": "error", "message": "import torch: %s" % e})
        return 1
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        say({"type": "error", "message": "this PyTorch sees no CUDA device "
                                         "(torch.cuda.is_available() is False)"})
        return 1
    try:
        srv = Server(torch, a.device)
    except Exception as e:  # noqa: BLE001
        say({"type": "error", "message": "%s: %s" % (type(e).__name__, e)})
        return 1
    say({"type": "ready", "framework": "pytorch", "framework_version": torch.__version__,
         "select": hasattr(torch._C, "_select_conv_backend")})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                break
            if op == "select":
                say(srv.select(req))
            elif op == "plan":
                say(srv.make_plan(req))
            elif op == "run":
                say(srv.run())
            elif op == "read":
                say(srv.read(req))
            elif op == "release":
                say(srv.release())
            else:
                say({"type": "error", "message": "unknown op %r" % op})
        except Exception as e:  # noqa: BLE001 - every failure is answered
            msg = str(e).strip().splitlines()[0][:500] if str(e).strip() else type(e).__name__
            say({"type": "error", "message": "%s: %s" % (type(e).__name__, msg),
                 "oom": "out of memory" in str(e)})
    return 0


def _probe(a):
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        out.write(json.dumps({"type": "error", "message": "import torch: %s" % e}) + "\n")
        return 1
    cuda = torch.cuda.is_available()
    version, number = cudnn_version(torch) if cuda else ("", 0)
    cc = ""
    if cuda:
        index = int(a.device.split(":")[1]) if ":" in a.device else 0
        if index < torch.cuda.device_count():
            major, minor = torch.cuda.get_device_capability(index)
            cc = "%d.%d" % (major, minor)
            torch.backends.cudnn.version()
    libs = loaded_libraries() if cuda else {}
    if cuda and cc and not ("nvrtc" in libs and "cublasLt" in libs):
        # Some libraries are loaded only when cuDNN first runs a conv.
        try:
            dev = torch.device(a.device)
            x = torch.randn(1, 8, 8, 8, device=dev)
            torch.nn.functional.conv2d(x, torch.randn(8, 8, 3, 3, device=dev)).sum().item()
            libs = loaded_libraries()
        except Exception:  # noqa: BLE001 - the probe reports what it can
            pass
    path = libs.get("cudnn", "") if number else ""
    out.write(json.dumps({
        "type": "probe", "framework": "pytorch", "framework_version": torch.__version__,
        "cuda": cuda, "cuda_version": torch.version.cuda or "",
        "cudnn_version": version, "cudnn_number": number,
        "cudnn_path": path, "cudnn_dir": os.path.dirname(path) if path else "",
        "libraries": libs, "compute_capability": cc, "settings": conv_settings(torch),
    }) + "\n")
    return 0


def main(argv):
    p = argparse.ArgumentParser()
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--probe", action="store_true")
    g.add_argument("--serve", action="store_true")
    p.add_argument("--device", default="cuda:0")
    a = p.parse_args(argv)
    return _probe(a) if a.probe else _serve(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
