#!/usr/bin/env python3
"""traincast trace runner for PyTorch.

Trains a torchvision model, or one a Python file builds (--model
FILE.py:FUNC, export_onnx.py), on synthetic data held on the device (forward,
loss, backward, optimizer step, zero_grad) and reports each iteration's
synchronized wall time on stdout in the traincast trace line protocol
(docs/trace-protocol.md). Everything else this program or the framework
prints goes to stderr.

Exit status: 0 ok, 1 failure (an "error" line says why), 2 bad arguments,
3 out of memory (an "oom" line says where).
"""

import argparse
import contextlib
import ctypes
import json
import math
import os
import re
import resource
import socket
import sys
import time

import cpu_env
import energy
import export_onnx
import gpu_env
import host_canary

PROTOCOL = 1
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_OOM = 3

# Stdout carries the protocol only: keep a handle on it and send every other
# print (ours, the framework's, a library's) to stderr.
_PROTO = sys.stdout
sys.stdout = sys.stderr


def emit(obj):
    _PROTO.write(json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n")
    _PROTO.flush()


def fail(message, status=EXIT_FAILED):
    emit({"type": "error", "message": message})
    sys.exit(status)


def is_oom(exc):
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text
        or "can't allocate memory" in text
        or "not enough memory" in text)


def parse_args(argv):
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=env("TRAINCAST_TRACE_MODEL"),
                   help="torchvision model name, e.g. resnet50, or FILE.py:FUNC")
    p.add_argument("--batch", type=int, default=int(env("TRAINCAST_TRACE_BATCH", "0")))
    p.add_argument("--input-size", type=int, default=int(env("TRAINCAST_TRACE_INPUT_SIZE", "0")),
                   help="height and width of the synthetic images (0: the model's default)")
    p.add_argument("--device", default=env("TRAINCAST_TRACE_DEVICE", "cpu"),
                   help="cpu or cuda:I")
    p.add_argument("--threads", type=int, default=int(env("TRAINCAST_TRACE_THREADS", "0")),
                   help="CPU threads (torch.set_num_threads); 0 leaves the default")
    p.add_argument("--dtype", default=env("TRAINCAST_TRACE_DTYPE", "fp32"),
                   choices=["fp32", "fp32_strict", "tf32", "fp16", "bf16"],
                   help="fp32: PyTorch's defaults (cuDNN may use TF32 on compute capability "
                        "8.0 and up, matmuls stay fp32); fp32_strict: no TF32; tf32: TF32 "
                        "for convs and matmuls")
    p.add_argument("--amp", default=env("TRAINCAST_TRACE_AMP", ""),
                   help="automatic mixed precision: '' (off), fp16 or bf16")
    p.add_argument("--optimizer", default=env("TRAINCAST_TRACE_OPTIMIZER", "sgd"),
                   help="sgd|adam|adamw, optionally with ,key=value options "
                        "(e.g. sgd,momentum=0.9,weight_decay=1e-4)")
    p.add_argument("--cudnn-benchmark", type=int, choices=[0, 1],
                   default=int(env("TRAINCAST_TRACE_CUDNN_BENCHMARK", "0")))
    p.add_argument("--warmup", type=int, default=int(env("TRAINCAST_TRACE_WARMUP", "3")))
    p.add_argument("--iters", type=int, default=int(env("TRAINCAST_TRACE_ITERS", "10")))
    p.add_argument("--profile", type=int, choices=[0, 1],
                   default=int(env("TRAINCAST_TRACE_PROFILE", "0")),
                   help="profile one extra iteration and report time per op class")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allocator", default=env("TRAINCAST_TRACE_ALLOCATOR", ""),
                   help="memory allocator to train with: tcmalloc (default), jemalloc, "
                        "glibc-tuned or system (as started); the agent passes its own")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        if e.code:
            fail("bad arguments: " + " ".join(argv), EXIT_USAGE)
        raise
    if not a.model:
        fail("--model is required", EXIT_USAGE)
    if a.batch < 1 or a.warmup < 0 or a.iters < 1 or a.input_size < 0 or a.threads < 0:
        fail("--batch and --iters must be >= 1; --warmup, --input-size, --threads >= 0",
             EXIT_USAGE)
    if a.amp not in ("", "none", "fp16", "bf16"):
        fail("--amp must be '', fp16 or bf16 (got %r)" % a.amp, EXIT_USAGE)
    if a.amp == "none":
        a.amp = ""
    if a.amp and a.dtype not in ("fp32", "fp32_strict", "tf32"):
        fail("--amp needs fp32 or tf32 master weights (got --dtype %s)" % a.dtype, EXIT_USAGE)
    if a.device != "cpu" and not re.fullmatch(r"cuda:\d+", a.device):
        fail("--device must be cpu or cuda:I (got %r)" % a.device, EXIT_USAGE)
    return a


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") or line.startswith("Model"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return "unknown CPU"


def onednn_version(torch):
    m = re.search(r"(?:MKL-DNN|oneDNN) v([0-9][0-9.]*)", torch.__config__.show())
    return m.group(1) if m else ""


def cudnn_version(torch):
    v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if not v:
        return ""
    if v >= 90000:
        return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)
    return "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100)


def cuda_driver_version():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return "%d.%d" % (v.value // 1000, v.value % 1000 // 10)
    except OSError:
        pass
    return ""


def classification_models(torchvision):
    if hasattr(torchvision.models, "list_models"):
        return set(torchvision.models.list_models(module=torchvision.models))
    return {n for n in dir(torchvision.models)
            if n[0].islower() and callable(getattr(torchvision.models, n))}


def build_optimizer(torch, spec, params):
    name, _, rest = spec.partition(",")
    opts = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            fail("optimizer option %r is not key=value" % item, EXIT_USAGE)
        try:
            opts[key.strip()] = float(value)
        except ValueError:
            fail("optimizer option %r needs a number" % item, EXIT_USAGE)
    classes = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    if name not in classes:
        fail("unknown optimizer %r (sgd, adam or adamw)" % name, EXIT_USAGE)
    if name == "sgd":
        opts.setdefault("lr", 0.01)
        opts.setdefault("momentum", 0.0)
        opts.setdefault("weight_decay", 0.0)
    try:
        return classes[name](params, **opts)
    except (TypeError, ValueError) as e:
        fail("optimizer %r: %s" % (spec, e), EXIT_USAGE)


# Op classes as traincast groups non-conv layers (common/onnx/tc_features.h),
# matched against profiler event names with "aten::" and the autograd
# engine's prefix removed, lower-cased ("conv2d", "convolutionbackward0").
# The first matching rule wins.
_BWD = r"(backward\d*)?"
_OP_RULES = [(cls, re.compile(rx)) for cls, rx in [
    ("other", r"^(traincast\.|optimizer\.|torch::autograd::accumulategrad|cross_entropy|"
              r"nll_loss|log_softmax|logsoftmax|nllloss)"),
    ("conv", r"conv"),
    ("bn", r"batch_?norm"),
    ("act", r"relu|hardtanh|sigmoid|silu|hardswish|hardsigmoid|gelu|tanh|threshold|clamp|elu"),
    ("pool", r"pool"),
    ("dropout", r"dropout|bernoulli"),
    ("gemm", r"^(addmm|linear|matmul|mm|bmm)(_|" + _BWD + r"$)"),
    ("concat", r"^(cat|stack|split|split_with_sizes|unsafe_split|chunk)(_|" + _BWD + r"$)"),
    ("norm", r"^(layer_norm|native_layer_norm|layernorm|nativelayernorm)(_|" + _BWD + r"$)"),
    ("softmax", r"^(softmax|_softmax)(_|" + _BWD + r"$)"),
    ("reduce", r"^(mean|sum)(_|" + _BWD + r"$)"),
    ("eltwise", r"^(add|mul|sub|div|rsub)(_|" + _BWD + r"$)"),
    # Explicit copies; a reshape that copies keeps its clone under "shape"
    # (the outermost op with a class wins).
    ("copy", r"^(constant_pad_nd|pad|contiguous|clone|index_select|repeat)(_|" + _BWD + r"$)"),
    ("shape", r"^(view|reshape|_reshape_alias|reshapealias|flatten|transpose|permute|t|slice|"
              r"expand|squeeze|unsqueeze|narrow|select|"
              r"as_strided|_unsafe_view|unsafe_view|unsafeview)(_|" + _BWD + r"$)"),
]]
_PREFIXES = ("autograd::engine::evaluate_function: ", "aten::")


def op_class(name):
    n = name
    for prefix in _PREFIXES:
        if n.startswith(prefix):
            n = n[len(prefix):]
    n = n.lower()
    for cls, rx in _OP_RULES:
        if rx.search(n):
            return cls
    return None


def _device_us(ev):
    """An op's own time on the GPU in microseconds: the kernels it launched
    less those of its child ops (self_device_time_total; 1.13 calls it
    self_cuda_time_total)."""
    us = getattr(ev, "self_device_time_total", None)
    return ev.self_cuda_time_total if us is None else us


def _is_cpu_op(ev):
    """True for an op the framework ran on the host (the profiler's
    FunctionEvents of device type CPU); False for a GPU kernel or memcpy,
    which the profiler also lists as an event of its own."""
    kind = getattr(ev, "device_type", None)
    return kind is None or getattr(kind, "name", str(kind)).upper().endswith("CPU")


def op_class_times(events, cuda):
    """Self time per op class (ms). On a GPU: the device time of each host
    op's own kernels, counted once, through the host op that launched them
    (the kernel events the profiler also lists are skipped: counted as well,
    every kernel would count twice, under its own name: "other" for most,
    "conv" for PyTorch's depthwise kernels, whatever op launched them). On
    a CPU: each op's self CPU time. An op's time goes to the class of its
    outermost ancestor that has one (aten::linear's transpose is gemm
    time), else its own, else "other"."""
    totals = {}
    for ev in events:
        if not _is_cpu_op(ev):
            continue
        chain = []
        e = ev
        while e is not None:
            chain.append(e)
            e = e.cpu_parent
        cls = None
        for e in reversed(chain):
            cls = op_class(e.name)
            if cls:
                break
        us = _device_us(ev) if cuda else ev.self_cpu_time_total
        if us > 0:
            totals[cls or "other"] = totals.get(cls or "other", 0.0) + us / 1000.0
    return totals


def main(argv):
    a = parse_args(argv)
    # As PyTorch's CPU launcher does (torch.backends.xeon.run_cpu): a caching
    # allocator preloaded, so freed tensors are not returned to the kernel
    # and faulted in again on every iteration.
    cpu_env.ensure_allocator(a.allocator or cpu_env.DEFAULT_ALLOCATOR, bool(a.allocator), fail)
    import torch
    import torchvision

    cuda = a.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        fail("--device %s: this PyTorch has no usable CUDA device (torch.cuda.is_available() "
             "is False)" % a.device)
    if not cuda and (a.dtype in ("tf32", "fp32_strict") or a.amp == "fp16"):
        fail("--dtype tf32 and --amp fp16 need a CUDA device", EXIT_USAGE)
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    if cuda:
        torch.cuda.set_device(dev)
        # PyTorch's defaults unless told: fp32 leaves TF32 as PyTorch sets it.
        gpu_env.apply_dtype(torch, a.dtype)
        if bool(a.cudnn_benchmark) != torch.backends.cudnn.benchmark:
            torch.backends.cudnn.benchmark = bool(a.cudnn_benchmark)

    from_file = export_onnx.python_spec(a.model)
    if from_file and not os.path.isfile(from_file[0]):
        fail("model %s: no such file %s" % (a.model, from_file[0]), EXIT_USAGE)
    if not from_file and a.model not in classification_models(torchvision):
        fail("unknown torchvision classification model %r" % a.model, EXIT_USAGE)
    input_size = a.input_size or (299 if a.model == "inception_v3" else 224)

    if cuda:
        props = torch.cuda.get_device_properties(dev)
        device_name = props.name
        device_uuid = str(getattr(props, "uuid", "") or "")
        library, library_version = "cudnn", cudnn_version(torch)
        # Loaded by now: the first conv loads cuDNN.
        torch.nn.functional.conv2d(torch.zeros(1, 1, 3, 3, device=dev),
                                   torch.zeros(1, 1, 1, 1, device=dev))
    else:
        device_name, device_uuid = cpu_model(), ""
        library, library_version = "onednn", onednn_version(torch)
    emit({
        "type": "header", "protocol": PROTOCOL,
        "framework": "pytorch", "framework_version": torch.__version__,
        "library": library, "library_version": library_version,
        "runtime_version": (torch.version.cuda or "") if cuda else "",
        "driver_version": cuda_driver_version() if cuda else "",
        "torchvision_version": torchvision.__version__,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "host": socket.gethostname(),
        "allocator": cpu_env.describe_allocator(),
        "blas": cpu_env.describe_blas(cpu_env.loaded_blas()),
        "device": a.device, "device_name": device_name, "device_uuid": device_uuid,
        "threads": torch.get_num_threads() if not cuda else 0,
        "model": a.model, "batch": a.batch, "input_size": input_size,
        "dtype": a.dtype, "amp": a.amp, "optimizer": a.optimizer,
        "cudnn_benchmark": bool(a.cudnn_benchmark),
        "warmup": a.warmup, "iters": a.iters,
        # Every flag and environment variable that changes what a conv
        # computes, as this process runs with them.
        "settings": gpu_env.conv_settings(torch),
        "library_path": gpu_env.cudnn_library() if cuda else "",
    })
    nvml_uuid = device_uuid if device_uuid.startswith("GPU-") or not device_uuid \
        else "GPU-" + device_uuid
    nvml = gpu_env.Nvml(dev.index or 0, nvml_uuid) if cuda else None
    clocks, watts = [], []

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.dtype, torch.float32)
    try:
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        # Vision transformers are built for the input size (export_onnx).
        if from_file:
            try:
                model = export_onnx.build_model(a.model, input_size=input_size)
            except SystemExit as e:  # export_onnx printed why on stderr
                fail("model %s cannot be built (stderr says why)" % a.model,
                     EXIT_USAGE if e.code == 2 else EXIT_FAILED)
        else:
            model = getattr(torchvision.models, a.model)(
                weights=None, **export_onnx.size_kwargs(a.model, input_size))
        model = model.to(device=dev, dtype=dtype).train()
        opt = build_optimizer(torch, a.optimizer, model.parameters())
        x = torch.randn(a.batch, 3, input_size, input_size, device=dev, dtype=dtype)
        classes = 1000  # torchvision's classifiers
        if from_file:  # the model's own width, from one untimed forward pass
            with torch.no_grad():
                out = model(x)
            classes = out.shape[-1] if out.dim() == 2 else 0
            if classes < 1:
                fail("model %s: its forward returned a %s tensor, not (batch, classes) "
                     "logits" % (a.model, tuple(out.shape)), EXIT_USAGE)
            del out
        y = torch.randint(0, classes, (a.batch,), device=dev)
        loss_fn = torch.nn.CrossEntropyLoss()
        amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.amp)
        scaler = torch.cuda.amp.GradScaler() if a.amp == "fp16" else None

        def autocast():
            if not amp_dtype:
                return contextlib.nullcontext()
            return torch.autocast(device_type="cuda" if cuda else "cpu", dtype=amp_dtype)

        def loss_of(out):
            # Auxiliary classifiers train with the weights torchvision's
            # reference scripts use (inception_v3 0.4, googlenet 0.3).
            if hasattr(out, "aux_logits"):
                return loss_fn(out.logits, y) + 0.4 * loss_fn(out.aux_logits, y)
            if hasattr(out, "aux_logits1"):
                return (loss_fn(out.logits, y) + 0.3 * loss_fn(out.aux_logits1, y)
                        + 0.3 * loss_fn(out.aux_logits2, y))
            return loss_fn(out, y)

        def sync():
            if cuda:
                torch.cuda.synchronize(dev)

        def step():
            with autocast():
                out = model(x)
                with torch.autograd.profiler.record_function("traincast.loss"):
                    loss = loss_of(out)
            if scaler:
                scaler.scale(loss).backward()
                with torch.autograd.profiler.record_function("traincast.optimizer"):
                    scaler.step(opt)
                    scaler.update()
            else:
                loss.backward()
                with torch.autograd.profiler.record_function("traincast.optimizer"):
                    opt.step()
            with torch.autograd.profiler.record_function("traincast.optimizer"):
                opt.zero_grad()
            return loss

        # The host-phase canary (host_canary.py), when the agent asks for it
        # on a CPU device: read before and after every iteration, outside its
        # time; an iteration's line carries the slower reading.
        canary = None
        if os.environ.get("TRAINCAST_TRACE_CANARY") == "1" and not cuda:
            canary = host_canary.reader(torch)
            canary()

        sync()
        meter = energy.meter(cuda, nvml)
        joules = [None, None]   # before the first measured step, after the last
        before = canary() if canary else None
        for i in range(a.warmup + a.iters):
            if i == a.warmup:
                joules[0] = meter.joules()
            t0 = time.perf_counter()
            loss = step()
            sync()
            ms = (time.perf_counter() - t0) * 1000.0
            at_us = time.time_ns() // 1000
            if i == 0 and not math.isfinite(float(loss)):
                fail("the loss is not finite (%s) after the first iteration" % float(loss))
            if nvml and i >= a.warmup:
                clocks.append(nvml.sm_clock_mhz())
                watts.append(nvml.power_w())
            line = {"type": "iter", "index": i, "warmup": i < a.warmup, "ms": ms, "at_us": at_us}
            if canary:
                after = canary()
                line["canary_ms"] = max(before, after)
                before = after
            emit(line)
        joules[1] = meter.joules()

        op_times = None
        if a.profile:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if cuda:
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=acts) as prof:
                step()
                sync()
            op_times = op_class_times(prof.events(), cuda)
        if cuda:
            peak = torch.cuda.max_memory_allocated(dev)
            peak_kind = "cuda_max_memory_allocated"
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            peak_kind = "process_peak_rss"
    except Exception as e:  # noqa: BLE001 - every failure is reported on the protocol
        if is_oom(e):
            emit({"type": "oom", "message": str(e).strip().splitlines()[0][:1000]})
            sys.exit(EXIT_OOM)
        fail("%s: %s" % (type(e).__name__, str(e).strip()[:2000]))

    footer = {"type": "footer", "peak_memory_bytes": int(peak), "peak_memory_kind": peak_kind}
    if gpu_env.median(clocks) is not None:
        footer["sm_clock_mhz"] = gpu_env.median(clocks)
    if gpu_env.median(watts) is not None:
        footer["power_w"] = gpu_env.median(watts)
    per_step = energy.per_step(joules[0], joules[1], a.iters)
    if per_step is not None:
        footer["energy_j"] = per_step
        footer["energy_source"] = meter.source
    else:
        footer["energy_absent"] = meter.why or "the energy counter could not be read"
    if op_times is not None:
        footer["op_times_ms"] = op_times
    emit(footer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
