#!/usr/bin/env python3
"""bench/gpu_conv_check.py: does the agent time the convs and matmuls PyTorch computes on a GPU?

The parts of deploy/gpu-check.sh's conv check, each run on its own so that
one that fails or runs out of time costs only its own figures. Every part
appends one JSON line per result to --jsonl as soon as that result is
known (nothing is held back to the end), and a failing item is written as
such ("status": "failed" with the error) while the rest go on.

  facts     what the machine runs: the GPU and driver (nvidia-smi), PyTorch,
            CUDA, cuDNN, the TF32 flags of convs and matmuls, the CUDA
            libraries PyTorch loaded, and what `agent info` says it loaded.
  convs     a dozen convs of the CNN set (3x3, 1x1, 7x7 stride 2, depthwise
            3x3, 5x5 and 7x7, grouped, layers with a bias) at one batch and
            one dtype (fp32 as PyTorch computes it by default; fp16 as AMP
            runs convs), per direction:
              A  the agent's benchmark (`agent bench --convs --json`: the
                 path PyTorch takes, cuDNN or its own kernels, with the
                 heuristic policy PyTorch uses with cudnn.benchmark off);
              B  PyTorch's own call of the same op: aten::convolution for
                 the forward, aten::convolution_backward with the direction's
                 output mask for backward-data and backward-filter, timed as
                 the agent times (a spin of about 1 ms before each call so no
                 host overhead is in the sample, CUDA events, inputs rotated
                 through copies larger than twice the L2 cache), the median
                 of --reps calls; also the mean of the same calls back to back.
            A line per conv and direction with A, B and A/B.
  matmuls   a dozen matmuls of vit_b_16, swin_t and convnext_tiny at 224 px
            (Linear layers with and without a bias, attention's batched
            products, a classifier head) at one batch and dtype, per
            direction (forward, the gradient of A, the gradient of B):
              A  the agent's benchmark, one call for all of them (`agent
                 bench --convs LIST --ops matmul --json`, a list of matmul
                 lines: cuBLAS or cuBLASLt as PyTorch calls them; TF32 off
                 in fp32, PyTorch's matmul default);
              B  PyTorch's own call: torch.addmm with the bias, torch.mm or
                 torch.bmm on the operands' stored layouts for the forward,
                 the forward's autograd node called directly for a gradient
                 (as bench/matmul_faithfulness.py on the CPU), timed as for
                 convs.
            A line per matmul and direction with A, B and A/B.
  numerics  `agent bench-conv --verify` on small convs of each kind (cuDNN in
            fp32, fp16, bf16 and channels-last, PyTorch's own depthwise
            kernels) and `agent bench-matmul --verify` on small matmuls
            (fp32, fp16, bf16, tf32; Linear and batched): the chosen
            algorithm's output against the naive reference. A line per conv
            or matmul.
  step      one training step of --model: the agent's conv benchmarks summed
            as the predictor sums them (forward, backward-filter, and
            backward-data but for the first conv, times multiplicity)
            against the conv time PyTorch's profiler attributes to a traced
            step (agent/harness/trace_runner.py --profile 1), fp32 or AMP;
            and its matmul benchmarks summed likewise (forward, and each
            operand's gradient where the step computes it) against the
            profiler's gemm time.
  report    the Markdown report of whatever lines --jsonl holds (to --out or
            stdout), with the medians and shares of A/B against the goal.

usage: gpu_conv_check.py facts|convs|matmuls|numerics|step|report --jsonl FILE
         [--agent AGENT] [--device cuda:0|cpu] [--work DIR] [--dtype fp32|fp16|bf16]
         [--amp fp16|bf16|none] [--batch 32] [--model resnet18] [--input-size 224]
         [--scale 1] [--budget-ms 300] [--reps 30] [--threads N] [--out FILE]
Exit status: 0 when the part ran (its items are reported, not judged, and
some may have failed), 1 when it could not run at all, 2 on bad usage.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def harness_dir():
    """The agent's harness: $TRAINCAST_HARNESS_DIR, the bundle's
    share/traincast/harness beside this file, or the source tree's."""
    for d in (os.environ.get("TRAINCAST_HARNESS_DIR"), os.path.join(HERE, "..", "harness"),
              os.path.join(HERE, "..", "agent", "harness")):
        if d and os.path.exists(os.path.join(d, "trace_runner.py")):
            return os.path.abspath(d)
    return os.path.join(HERE, "..", "agent", "harness")


HARNESS = harness_dir()
sys.path.insert(0, HARNESS)

from matmul_config import MB_BATCH, MB_ROWS  # noqa: E402
import matmul_config  # noqa: E402

# (name, c, h, k, r, stride, pad, groups, bias, first): h = w.
CONVS = [
    ("resnet50 3x3", 64, 56, 64, 3, 1, 1, 1, False, False),
    ("resnet50 1x1 reduce", 256, 56, 64, 1, 1, 0, 1, False, False),
    ("resnet50 1x1 expand", 64, 56, 256, 1, 1, 0, 1, False, False),
    ("resnet 7x7/2 stem", 3, 224, 64, 7, 2, 3, 1, False, True),
    ("resnet50 3x3/2", 128, 56, 128, 3, 2, 1, 1, False, False),
    ("mobilenet_v2 depthwise 3x3/2", 96, 112, 96, 3, 2, 1, 96, False, False),
    ("mobilenet_v2 depthwise 3x3", 144, 56, 144, 3, 1, 1, 144, False, False),
    ("efficientnet depthwise 5x5", 240, 28, 240, 5, 1, 2, 240, False, False),
    ("resnext50 grouped 3x3", 128, 56, 128, 3, 1, 1, 32, False, False),
    ("convnext depthwise 7x7 +bias", 96, 56, 96, 7, 1, 3, 96, True, False),
    ("alexnet 3x3 +bias", 384, 13, 256, 3, 1, 1, 1, True, False),
    ("squeezenet 1x1 +bias", 64, 55, 16, 1, 1, 0, 1, True, False),
]
# Small convs for the numerics part: (name, c, h, k, r, stride, pad, groups,
# bias, dtype, layout); the reference runs on the CPU.
NUMERICS = [
    ("3x3", 16, 14, 32, 3, 1, 1, 1, False, "fp32", "nchw"),
    ("3x3", 16, 14, 32, 3, 1, 1, 1, False, "fp16", "nchw"),
    ("3x3", 16, 14, 32, 3, 1, 1, 1, False, "bf16", "nchw"),
    ("3x3 channels-last", 16, 14, 32, 3, 1, 1, 1, False, "fp16", "nhwc"),
    ("1x1/2", 32, 14, 16, 1, 2, 0, 1, False, "fp32", "nchw"),
    ("7x7/2 stem +bias", 3, 32, 16, 7, 2, 3, 1, True, "fp32", "nchw"),
    ("grouped 3x3", 32, 14, 32, 3, 1, 1, 4, False, "fp16", "nchw"),
    ("depthwise 3x3", 32, 14, 32, 3, 1, 1, 32, False, "fp32", "nchw"),
]
DIRS = ("fwd", "bwd_data", "bwd_filter")
# A dozen matmuls of the transformers and ConvNeXts at 224 px, as `agent model
# describe` lists them (tests/deploy/test_gpu_check_lists.py checks it; sizes
# per sample): (name, products per sample, m, n, k,
# where the mini-batch goes (MB_ROWS: rows of one product, MB_BATCH: more
# products), trans_a, trans_b, weight, bias).
MATMULS = [
    ("vit_b_16 qkv", 1, 197, 2304, 768, MB_ROWS, False, True, True, False),
    ("vit_b_16 attention out +bias", 1, 197, 768, 768, MB_ROWS, False, True, True, True),
    ("vit_b_16 mlp up +bias", 1, 197, 3072, 768, MB_ROWS, False, True, True, True),
    ("vit_b_16 mlp down +bias", 1, 197, 768, 3072, MB_ROWS, False, True, True, True),
    ("vit_b_16 scores (bmm)", 12, 197, 197, 64, MB_BATCH, False, True, False, False),
    ("vit_b_16 values (bmm)", 12, 197, 64, 197, MB_BATCH, False, False, False, False),
    ("vit_b_16 head +bias", 1, 1, 1000, 768, MB_ROWS, False, True, True, True),
    ("swin_t window qkv +bias", 1, 3136, 288, 96, MB_ROWS, False, True, True, True),
    ("swin_t window scores (bmm)", 192, 49, 49, 32, MB_BATCH, False, True, False, False),
    ("swin_t window values (bmm)", 192, 49, 32, 49, MB_BATCH, False, False, False, False),
    # A Linear on ConvNeXt's 4-D channels-last tensor runs as matmul's mm, its
    # bias added after (docs/matmul-benchmarks.md, "The importer").
    ("convnext_tiny pointwise up", 1, 3136, 384, 96, MB_ROWS, False, True, True, False),
    ("convnext_tiny pointwise down", 1, 3136, 96, 384, MB_ROWS, False, True, True, False),
]
# Small matmuls for the numerics part: (name, products, m, n, k, where, trans_a,
# trans_b, weight, bias, dtype); the reference runs on the host.
MATMUL_NUMERICS = [
    ("linear +bias", 1, 10, 48, 32, MB_ROWS, False, True, True, True, "fp32"),
    ("linear", 1, 10, 48, 32, MB_ROWS, False, True, True, False, "fp16"),
    ("linear +bias", 1, 10, 48, 32, MB_ROWS, False, True, True, True, "bf16"),
    ("linear", 1, 10, 48, 32, MB_ROWS, False, True, True, False, "tf32"),
    ("bmm q.k^T", 4, 9, 9, 16, MB_BATCH, False, True, False, False, "fp32"),
    ("bmm attn.v", 4, 9, 16, 9, MB_BATCH, False, False, False, False, "fp16"),
]
KEYS = ("c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w", "dilation_h",
        "dilation_w", "groups", "bias")
MATMUL_KEYS = ("batch", "m", "n", "k", "minibatch_in", "trans_a", "trans_b", "weight", "bias")


def log(msg):
    sys.stderr.write("gpu_conv_check: %s\n" % msg)
    sys.stderr.flush()


class Lines:
    """The --jsonl file: each line appended and flushed at once."""

    def __init__(self, path):
        self.f = open(path, "a")

    def put(self, obj):
        obj.setdefault("at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self.f.write(json.dumps(obj, allow_nan=False) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def run(cmd, timeout, ok=(0,)):
    """(status, stdout, stderr) of a command; raises on a timeout."""
    log(" ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode not in ok:
        raise RuntimeError("%s exited %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                                 tail(p.stderr or p.stdout)))
    return p.returncode, p.stdout, p.stderr


def tail(text, n=600):
    text = (text or "").strip()
    lines = [x for x in text.splitlines() if x.strip()]
    return " | ".join(lines[-3:])[-n:]


def key_of(d):
    return tuple(int(d[k]) if k != "bias" else bool(d[k]) for k in KEYS)


def matmul_key_of(d):
    """A matmul's key (the agent's JSON line or a config dict), dtype aside."""
    return tuple(int(d[k]) for k in MATMUL_KEYS)


def scaled(conv, scale):
    name, c, h, k, r, stride, pad, groups, bias, first = conv
    h = max(r, h // scale) if scale > 1 else h
    return name, c, h, k, r, stride, pad, groups, bias, first


def matmul_dict(mmul):
    """A MATMULS entry as the agent's matmul config."""
    name, batch, m, n, k, where, trans_a, trans_b, weight, bias = mmul[:10]
    return {"batch": batch, "m": m, "n": n, "k": k, "minibatch_in": where, "trans_a": trans_a,
            "trans_b": trans_b, "weight": weight, "bias": bias}


def matmul_scaled(mmul, scale):
    """Fewer rows (tokens) per product, for a CPU rehearsal."""
    if scale <= 1:
        return mmul
    return mmul[:2] + (max(1, mmul[2] // scale),) + mmul[3:]


def matmul_cmd(a, c, dtype, mb):
    """`agent bench-matmul` of one config, every direction, as JSON."""
    return [a.agent, "bench-matmul"] + matmul_config.bench_args(c, mb) + [
        "--dtype", dtype, "--format", "json"]


def conv_dict(conv, n):
    name, c, h, k, r, stride, pad, groups, bias, first = conv
    return {"n": n, "c": c, "h": h, "w": h, "k": k, "r": r, "s": r, "pad_h": pad, "pad_w": pad,
            "stride_h": stride, "stride_w": stride, "dilation_h": 1, "dilation_w": 1,
            "groups": groups, "bias": bias}


def device_args(a):
    return ["--device", a.device] + (["--threads", str(a.threads)] if a.device == "cpu" else [])


def read_agent_jsonl(path, op="conv"):
    """The agent's --json lines of one op kind so far (conv or matmul):
    {(key, direction): line}."""
    key = matmul_key_of if op == "matmul" else key_of
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # a line the agent was writing when it stopped
                if d.get("op", "conv") == op:
                    out[(key(d), d["direction"])] = d
    return out


def spin_for(torch, device):
    import gpu_env
    return gpu_env.Spin(torch, device)


class Timer:
    """PyTorch's own call of one conv or matmul direction, timed as the agent
    times."""

    def __init__(self, torch, device):
        self.torch = torch
        self.dev = torch.device(device)
        self.cuda = self.dev.type == "cuda"
        self.l2 = 0
        if self.cuda:
            props = torch.cuda.get_device_properties(self.dev)
            self.l2 = getattr(props, "L2_cache_size", 0) or 64 << 20
            self.spin = spin_for(torch, self.dev)

    def dtype(self, name):
        t = self.torch
        return {"fp16": t.float16, "bf16": t.bfloat16}.get(name, t.float32)

    def copies(self, read_bytes):
        """Sets of operands to rotate through: more than twice the L2 cache."""
        if not self.cuda:
            return 1
        return max(1, min(16, math.ceil(2 * self.l2 / max(1, read_bytes))))

    def time(self, d, direction, dtype, reps):
        """A conv direction: aten::convolution or aten::convolution_backward."""
        return self.released(self.conv_sample(d, direction, dtype, reps))

    def time_matmul(self, c, direction, dtype, reps, mb):
        """A matmul direction (matmul_sample)."""
        return self.released(self.matmul_sample(c, direction, dtype, reps, mb))

    def released(self, result):
        """The result, once the operands of its call are gone from the GPU."""
        if self.cuda:
            self.torch.cuda.empty_cache()
        return result

    def conv_sample(self, d, direction, dtype, reps):
        t = self.torch
        dt = self.dtype(dtype)
        x = t.randn(d["n"], d["c"], d["h"], d["w"], device=self.dev, dtype=dt)
        w = t.randn(d["k"], d["c"] // d["groups"], d["r"], d["s"], device=self.dev, dtype=dt)
        b = t.randn(d["k"], device=self.dev, dtype=dt) if d["bias"] else None
        stride, pad = [d["stride_h"], d["stride_w"]], [d["pad_h"], d["pad_w"]]
        dil, groups = [1, 1], d["groups"]
        y = t.ops.aten.convolution(x, w, b, stride, pad, dil, False, [0, 0], groups)
        read = (x.numel() if direction != "bwd_data" else 0) + \
            (y.numel() if direction != "fwd" else 0)
        copies = self.copies(read * x.element_size())
        sets = [(x.clone(), t.randn_like(y)) for _ in range(copies)]
        bias_sizes = [d["k"]] if b is not None else None
        mask = [direction == "bwd_data", direction == "bwd_filter",
                direction == "bwd_filter" and b is not None]

        def call(s):
            if direction == "fwd":
                return t.ops.aten.convolution(s[0], w, b, stride, pad, dil, False, [0, 0],
                                              groups)
            return t.ops.aten.convolution_backward(s[1], s[0], w, bias_sizes, stride, pad, dil,
                                                   False, [0, 0], groups, mask)

        return self.sample(call, sets, reps)

    def matmul_sample(self, c, direction, dtype, reps, mb):
        """A matmul direction as PyTorch computes it (as bench/matmul_faithfulness.py
        does on the CPU): the forward as the model calls it (torch.addmm with
        the bias, torch.mm, torch.bmm on the operands' stored layouts: a
        Linear's weight read as weight.t()), a gradient by the forward's
        autograd node (AddmmBackward0, MmBackward0, BmmBackward0) called
        directly for the one operand."""
        t = self.torch
        dt = self.dtype(dtype)
        count, m, n, k = matmul_config.gemm(c, mb)
        mm = matmul_config.is_mm(c)
        lead = () if mm else (count,)

        def stored(rows, cols):
            return t.randn(*lead, rows, cols, device=self.dev, dtype=dt)

        a_shape = (k, m) if c["trans_a"] else (m, k)
        b_shape = (n, k) if c["trans_b"] else (k, n)
        w = stored(*b_shape) if c["weight"] else None
        bias = t.randn(n, device=self.dev, dtype=dt) if c["bias"] else None

        def forward(a_, b_, ga, gb):
            x = a_.detach().requires_grad_(ga)
            y_ = b_.detach().requires_grad_(gb)
            xa = x.transpose(-2, -1) if c["trans_a"] else x
            yb = y_.transpose(-2, -1) if c["trans_b"] else y_
            if not mm:
                return t.bmm(xa, yb)
            return t.addmm(bias, xa, yb) if bias is not None else t.mm(xa, yb)

        elems = count * (m * k + (0 if c["weight"] else n * k) + m * n)
        copies = self.copies(elems * t.tensor([], dtype=dt).element_size())
        sets = []
        for _ in range(copies):
            a_ = stored(*a_shape)
            b_ = w if w is not None else stored(*b_shape)
            if direction == "fwd":
                sets.append((a_, b_))
            else:
                node = forward(a_, b_, direction == "bwd_data", direction == "bwd_filter").grad_fn
                sets.append((node, t.randn(*lead, m, n, device=self.dev, dtype=dt)))

        def call(s):
            if direction == "fwd":
                with t.no_grad():
                    return forward(s[0], s[1], False, False)
            return s[0](s[1])

        return self.sample(call, sets, reps)

    def sample(self, call, sets, reps):
        """(median of single calls, mean of calls back to back), ms."""
        t = self.torch
        copies = len(sets)
        for i in range(5):
            call(sets[i % copies])
        samples = []
        if self.cuda:
            t.cuda.synchronize()
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            for i in range(reps):
                self.spin()
                start.record()
                call(sets[i % copies])
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end))
            start.record()
            for i in range(reps):
                call(sets[i % copies])
            end.record()
            end.synchronize()
            back_to_back = start.elapsed_time(end) / reps
        else:
            for i in range(reps):
                t0 = time.perf_counter()
                call(sets[i % copies])
                samples.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            for i in range(reps):
                call(sets[i % copies])
            back_to_back = (time.perf_counter() - t0) * 1e3 / reps
        return statistics.median(samples), back_to_back


def against_torch(row, timers, a, torch, measure):
    """Completes an item's row (its agent_ms known) with PyTorch's time,
    measure(timer) -> (median ms, back-to-back ms), and A/B; or with why
    PyTorch's call failed: one item's failure is its own row."""
    try:
        if not timers:
            timers.append(Timer(torch, a.device))
        torch_ms, b2b = measure(timers[0])
        row.update(status="ok", torch_ms=torch_ms, torch_back_to_back_ms=b2b,
                   ratio=row["agent_ms"] / torch_ms)
    except Exception as e:  # noqa: BLE001 - one item's failure is its row
        row.update(status="failed", error="PyTorch's call: %s: %s"
                   % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""))
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()


def part_facts(a, out):
    """One line: the machine, PyTorch and its settings, the libraries."""
    import gpu_env
    facts = {"part": "facts", "device": a.device}
    try:
        q = "index,name,uuid,driver_version,memory.total,compute_cap,clocks.max.sm"
        _, smi, _ = run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], 60)
        facts["nvidia_smi"] = smi.strip().splitlines()
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        facts["nvidia_smi_error"] = str(e)
    import torch
    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda or ""
    facts["cuda_available"] = torch.cuda.is_available()
    if facts["cuda_available"] and a.device.startswith("cuda"):
        dev = torch.device(a.device)
        facts["gpu"] = torch.cuda.get_device_name(dev)
        facts["compute_capability"] = "%d.%d" % torch.cuda.get_device_capability(dev)
        facts["cudnn"] = gpu_env.cudnn_version(torch)[0]
        # A conv makes PyTorch load cuDNN and what it needs.
        x = torch.randn(2, 8, 16, 16, device=dev)
        torch.nn.functional.conv2d(x, torch.randn(8, 8, 3, 3, device=dev)).sum().item()
        facts["libraries"] = gpu_env.loaded_libraries()
    s = gpu_env.conv_settings(torch)
    facts["tf32"] = {k: v for k, v in s.items() if "tf32" in k.lower() or "precision" in k
                     or k == "env.NVIDIA_TF32_OVERRIDE"}
    facts["settings"] = {k: v for k, v in s.items() if v != ""}
    if a.agent:
        try:
            _, info, _ = run([a.agent, "info"], 300)
            facts["agent_info"] = info.strip().splitlines()
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            facts["agent_info_error"] = str(e)
    out.put(facts)
    return 0


def agent_bench_list(a, name, lines, op):
    """`agent bench` of a list of one op kind (conv or matmul lines, one
    model) at the check's batch and dtype, into NAME.tcr and NAME.jsonl
    under the work directory: ({(key, direction): its JSON line}, the error
    that stopped it or ""). What it measured before stopping still counts."""
    path = os.path.join(a.work, name + ".list")
    with open(path, "w") as f:
        f.write("model gpu-check\n" + "".join(line + "\n" for line in lines))
    jsonl = os.path.join(a.work, name + ".jsonl")
    tcr = os.path.join(a.work, name + ".tcr")
    for p in (jsonl, tcr):
        if os.path.exists(p):
            os.unlink(p)
    agent_error = ""
    try:
        run([a.agent, "bench", "--convs", path, "--ops", op, "--batches", str(a.batch),
             "--dtype", a.dtype, "--budget-ms", str(a.budget_ms), "--out", tcr, "--json", jsonl]
            + device_args(a), a.timeout)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        agent_error = str(e)
        log("the agent stopped: %s" % agent_error)
    return read_agent_jsonl(jsonl, op), agent_error


def part_convs(a, out):
    """A line per conv and direction: the agent's time against PyTorch's."""
    import torch
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    tag = a.dtype
    convs = [scaled(c, a.scale) for c in CONVS]
    lines = ["%d %d %d %d %d %d %d %d %d %d 1 1 %d 1 %d %d"
             % (c, h, h, k, r, r, pad, pad, stride, stride, groups, int(first), int(bias))
             for name, c, h, k, r, stride, pad, groups, bias, first in convs]
    agent, agent_error = agent_bench_list(a, "agent-%s" % tag, lines, "conv")
    timers = []  # the Timer, made at the first item the agent measured
    for conv in convs:
        d = conv_dict(conv, a.batch)
        for direction in DIRS:
            if direction == "bwd_data" and conv[9]:
                continue  # the first conv needs no input gradient
            row = {"part": "conv", "conv": conv[0], "direction": direction, "dtype": a.dtype,
                   "batch": a.batch, "config": d}
            got = agent.get((key_of(d), direction))
            if got is None:
                row.update(status="failed", error="the agent has no result: " +
                           (agent_error or "see its warnings in the log"))
                out.put(row)
                continue
            row.update(agent_ms=got["median_ms"], route=got.get("route", ""),
                       algo=got.get("algo", ""), sm_clock_mhz=got.get("sm_clock_mhz", 0),
                       power_w=got.get("power_w", 0))
            against_torch(row, timers, a, torch,
                          lambda tm: tm.time(d, direction, a.dtype, a.reps))
            out.put(row)
    return 0


def part_matmuls(a, out):
    """A line per matmul and direction: the agent's time against PyTorch's."""
    import torch
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    tag = a.dtype
    configs = [(mmul[0], matmul_dict(mmul)) for mmul in (matmul_scaled(x, a.scale) for x in MATMULS)]
    # One agent call for all of them, as for the convs: matmul classes,
    # each with both operands' gradients (every direction).
    lines = [matmul_config.list_line(c) for _, c in configs]
    agent, agent_error = agent_bench_list(a, "agent-matmuls-%s" % tag, lines, "matmul")
    timers = []  # the Timer, made at the first item the agent measured
    for name, c in configs:
        for direction in DIRS:
            row = {"part": "matmul", "matmul": name, "direction": direction,
                   "dtype": a.dtype, "batch": a.batch, "config": c}
            got = agent.get((matmul_key_of(c), direction))
            if got is None:
                row.update(status="failed", error="the agent has no result: " +
                           (agent_error or "see its warnings in the log"))
                out.put(row)
                continue
            row.update(agent_ms=got["median_ms"], route=got.get("route", ""))
            against_torch(row, timers, a, torch,
                          lambda tm: tm.time_matmul(c, direction, a.dtype, a.reps, a.batch))
            out.put(row)
    return 0


def part_numerics(a, out):
    """A line per small conv: the chosen algorithm's output against the
    reference, every direction."""
    cc = 0
    if a.device.startswith("cuda"):
        import torch
        cc = torch.cuda.get_device_capability(torch.device(a.device))[0]
    for name, c, h, k, r, stride, pad, groups, bias, dtype, layout in NUMERICS:
        row = {"part": "numerics", "conv": name, "dtype": dtype, "layout": layout}
        if dtype != "fp32" and a.device == "cpu":
            continue  # the CPU device computes fp32 only
        if dtype == "bf16" and cc < 8:
            row.update(status="skipped", error="bf16 convs need compute capability 8.0")
            out.put(row)
            continue
        cmd = [a.agent, "bench-conv", "--n", "2", "--c", str(c), "--h", str(h), "--w", str(h),
               "--k", str(k), "--r", str(r), "--s", str(r), "--pad", str(pad), "--stride",
               str(stride), "--groups", str(groups), "--dtype", dtype, "--layout", layout,
               "--budget-ms", "20", "--max-reps", "5", "--verify"] + device_args(a)
        if bias:
            cmd.append("--bias")
        try:
            st, text, err = run(cmd, 300, ok=(0, 1))
            verified = [ln for ln in text.splitlines() if "verified:" in ln]
            routes = sorted({ln.split("route:")[1].strip() for ln in text.splitlines()
                             if "route:" in ln})
            if st == 0 and len(verified) == 3:
                row.update(status="ok", checked=sum(int(v.split()[1]) for v in verified),
                           route=",".join(routes))
            else:
                row.update(status="wrong" if "wrong results" in err else "failed",
                           route=",".join(routes), error=tail(err or text))
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            row.update(status="failed", error=str(e))
        out.put(row)
    for mmul in MATMUL_NUMERICS:
        dtype = mmul[10]
        row = {"part": "numerics", "matmul": mmul[0], "dtype": dtype, "layout": "–"}
        if dtype != "fp32" and a.device == "cpu":
            continue
        if dtype in ("bf16", "tf32") and cc < 8:
            row.update(status="skipped", error="%s matmuls need compute capability 8.0" % dtype)
            out.put(row)
            continue
        cmd = matmul_cmd(a, matmul_dict(mmul), dtype, 2) + [
            "--budget-ms", "20", "--max-reps", "5", "--verify"] + device_args(a)
        try:
            st, text, err = run(cmd, 300, ok=(0, 1))
            rows = json.loads(text)["matmul"] if st == 0 else []
            routes = sorted({r.get("route", "") for r in rows})
            if st == 0 and len(rows) == 3 and all(r.get("verified") for r in rows):
                row.update(status="ok", checked=3, route=",".join(routes))
            else:
                row.update(status="wrong" if "wrong results" in err else "failed",
                           route=",".join(routes), error=tail(err or text))
        except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
            row.update(status="failed", error=str(e))
        out.put(row)
    return 0


def step_sums(describe, jsonl):
    """The benchmarks of `agent bench --json` (file jsonl) summed as the
    predictor sums a step of the model `agent model describe` gave: (conv
    sum, convs missing, matmul sum, matmuls missing)."""
    def total(times, items):
        """(sum, missing) over (key, directions, multiplicity) items."""
        ms, missing = 0.0, 0
        for key, directions, multiplicity in items:
            for direction in directions:
                got = times.get((key, direction))
                if got is None:
                    missing += 1
                else:
                    ms += multiplicity * got["median_ms"]
        return ms, missing

    # No gradient flows to the network's input: a first conv runs no bwd_data.
    convs = ((key_of(dict(u["config"])),
              [d for d in DIRS if d != "bwd_data" or not u["first_layer"]], u["multiplicity"])
             for u in describe["convs"])
    matmuls = ((matmul_key_of(u["config"]), matmul_config.step_directions(u), u["multiplicity"])
               for u in describe.get("matmuls", []))
    return (total(read_agent_jsonl(jsonl), convs) +
            total(read_agent_jsonl(jsonl, "matmul"), matmuls))


def part_step(a, out):
    """One line: the model's predicted conv and matmul sums against the
    profiler's conv and gemm times of a traced step."""
    amp = None if a.amp == "none" else a.amp
    tag = "amp-" + amp if amp else "fp32"
    row = {"part": "step", "mode": tag, "model": a.model, "batch": a.batch,
           "input_size": a.input_size}
    try:
        spec = "torchvision:" + a.model
        _, text, _ = run([a.agent, "model", "describe", spec, "--batch", str(a.batch),
                          "--input-size", str(a.input_size), "--format", "json"], 900)
        describe = json.loads(text)
        jsonl = os.path.join(a.work, "model-%s.jsonl" % tag)
        tcr = os.path.join(a.work, "model-%s.tcr" % tag)
        for p in (jsonl, tcr):
            if os.path.exists(p):
                os.unlink(p)
        try:
            run([a.agent, "bench", "--models", spec, "--input-size", str(a.input_size),
                 "--batches", str(a.batch), "--dtype", amp or "fp32", "--budget-ms",
                 str(a.budget_ms), "--out", tcr, "--json", jsonl] + device_args(a), a.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            log("the agent stopped: %s" % e)
        conv_sum, missing, mm_sum, mm_missing = step_sums(describe, jsonl)
        trace = [sys.executable, os.path.join(HARNESS, "trace_runner.py"), "--model", a.model,
                 "--batch", str(a.batch), "--input-size", str(a.input_size), "--device",
                 a.device, "--warmup", "3", "--iters", "5", "--profile", "1", "--allocator",
                 "system"]
        if amp:
            trace += ["--amp", amp]
        if a.device == "cpu":
            trace += ["--threads", str(a.threads)]
        _, text, _ = run(trace, a.timeout)
        lines = [json.loads(x) for x in text.splitlines() if x.strip()]
        iters = [x["ms"] for x in lines if x.get("type") == "iter" and not x["warmup"]]
        footer = [x for x in lines if x.get("type") == "footer"][0]
        ops = footer.get("op_times_ms", {})
        prof_conv, prof_gemm = ops.get("conv", 0.0), ops.get("gemm", 0.0)
        row.update(status="ok" if not missing and not mm_missing else "partial",
                   iteration_ms=statistics.median(iters),
                   conv_sum_ms=conv_sum, missing_items=missing, profiler_conv_ms=prof_conv,
                   matmul_sum_ms=mm_sum, missing_matmul_items=mm_missing,
                   profiler_gemm_ms=prof_gemm, profiler_ops_ms=ops,
                   ratio=conv_sum / prof_conv if prof_conv > 0 and not missing else None,
                   matmul_ratio=(mm_sum / prof_gemm if prof_gemm > 0 and mm_sum > 0
                                 and not mm_missing else None),
                   sm_clock_mhz=footer.get("sm_clock_mhz"), power_w=footer.get("power_w"))
    except Exception as e:  # noqa: BLE001 - reported as the part's line
        row.update(status="failed", error="%s: %s" % (type(e).__name__, tail(str(e))))
    out.put(row)
    return 0


# ---- the report -------------------------------------------------------------------------

def fmt(v, digits=3):
    return "–" if v is None else ("%.*f" % (digits, v))


def summary(rows):
    r = sorted(x["ratio"] for x in rows if x.get("status") == "ok")
    if not r:
        return None
    return {"n": len(r), "median": statistics.median(r), "min": r[0], "max": r[-1],
            "within_15pct": sum(1 for x in r if 0.85 <= x <= 1.15) / len(r),
            "within_10pct": sum(1 for x in r if 0.90 <= x <= 1.10) / len(r)}


AB_INTRO = {
    "conv": ("### Conv by conv: the agent against PyTorch's own call",
             "A = the agent's median per direction (`agent bench`, heuristic policy, on the "
             "path PyTorch takes); B = PyTorch's own call of the same op "
             "(aten::convolution / aten::convolution_backward), timed the same way (a spin "
             "of about 1 ms, CUDA events, inputs rotated past L2), median of the calls; "
             "B2B = the mean of the same calls back to back."),
    "matmul": ("### Matmul by matmul: the agent against PyTorch's own call",
               "A = the agent's median per direction (`agent bench` of a matmul list: cuBLAS or "
               "cuBLASLt as PyTorch calls them); B = PyTorch's own call of the same product "
               "(torch.addmm with the bias, torch.mm, torch.bmm on the stored layouts; a "
               "gradient by the forward's autograd node), timed the same way (a spin of about "
               "1 ms, CUDA events, operands rotated past L2), median of the calls; B2B = the "
               "mean of the same calls back to back. Sizes at 224 px."),
}


def ab_section(rows, kind):
    """The A/B table of one op kind, and its summary per dtype."""
    if not rows:
        return []
    heading, intro = AB_INTRO[kind]
    out = [heading, "", intro, "",
           "| %s | direction | dtype | route | algorithm | A ms | B ms | B2B ms | A/B |" % kind,
           "|---|---|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("status") == "ok":
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                       % (r[kind], r["direction"], r["dtype"], r.get("route", ""),
                          r.get("algo", "")[:40], fmt(r["agent_ms"], 4),
                          fmt(r["torch_ms"], 4), fmt(r.get("torch_back_to_back_ms"), 4),
                          fmt(r["ratio"])))
        else:
            out.append("| %s | %s | %s | %s | FAILED: %s | | | | |"
                       % (r[kind], r["direction"], r["dtype"], r.get("route", ""),
                          r.get("error", "")[:200].replace("|", "/")))
    out.append("")
    for dtype in sorted({r["dtype"] for r in rows}):
        sub = [r for r in rows if r["dtype"] == dtype]
        s = summary(sub)
        failed = sum(1 for r in sub if r.get("status") != "ok")
        if s:
            out.append("A/B over %d %s %s directions%s: median %.3f (range %.3f to %.3f), "
                       "%.0f %% within 0.85-1.15, %.0f %% within 0.90-1.10 (goal: median "
                       "0.95-1.05, 90 %% within 0.85-1.15)."
                       % (s["n"], dtype, kind, " (%d failed)" % failed if failed else "",
                          s["median"], s["min"], s["max"], 100 * s["within_15pct"],
                          100 * s["within_10pct"]))
        else:
            out.append("No %s %s direction was measured on both sides (%d failed)."
                       % (dtype, kind, failed))
    out.append("")
    return out


def report(rows):
    out = ["## The conv check", ""]
    facts = [r for r in rows if r.get("part") == "facts"]
    if facts:
        f = facts[-1]
        out += ["### Facts", ""]
        for line in f.get("nvidia_smi", []):
            out.append("- nvidia-smi: %s" % line)
        out.append("- PyTorch %s, CUDA %s, cuDNN %s, %s (compute capability %s)"
                   % (f.get("torch"), f.get("cuda") or "–", f.get("cudnn") or "–",
                      f.get("gpu", f.get("device")), f.get("compute_capability", "–")))
        out.append("- TF32: " + ", ".join("%s=%s" % kv for kv in sorted(f.get("tf32", {}).items())
                                          if kv[1] != ""))
        for name, path in sorted(f.get("libraries", {}).items()):
            out.append("- PyTorch loaded %s: %s" % (name, path))
        for line in f.get("agent_info", []):
            if line.strip().startswith(("cuda", "cpu ")) and ("cuDNN" in line or "oneDNN" in line):
                out.append("- agent info: %s" % line.strip())
        out.append("")
    out += ab_section([r for r in rows if r.get("part") == "conv"], "conv")
    out += ab_section([r for r in rows if r.get("part") == "matmul"], "matmul")
    num = [r for r in rows if r.get("part") == "numerics"]
    if num:
        out += ["### Numerics (`agent bench-conv --verify`, `agent bench-matmul --verify`)", "",
                "| conv or matmul | dtype | layout | route | result |", "|---|---|---|---|---|"]
        for r in num:
            what = "values" if "conv" in r else "directions"
            res = ("%d %s match the reference" % (r["checked"], what) if r.get("status") == "ok"
                   else "%s: %s" % (r.get("status"), r.get("error", "")[:200].replace("|", "/")))
            out.append("| %s | %s | %s | %s | %s |" % (r.get("conv", r.get("matmul")), r["dtype"],
                                                      r["layout"], r.get("route", ""), res))
        out.append("")
    steps = [r for r in rows if r.get("part") == "step"]
    if steps:
        out += ["### One training step: predicted conv and matmul sums against the profiler", "",
                "| model | batch | mode | iteration ms | conv sum ms (agent) | profiler conv ms | "
                "sum / profiler | matmul sum ms (agent) | profiler gemm ms | sum / profiler | "
                "SM MHz | W |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in steps:
            if s.get("status") == "failed":
                out.append("| %s | %d | %s | FAILED: %s | | | | | | | | |"
                           % (s["model"], s["batch"], s["mode"],
                              s.get("error", "")[:200].replace("|", "/")))
                continue
            mm_missing = s.get("missing_matmul_items", 0)
            out.append("| %s | %d | %s | %s | %s%s | %s | %s | %s%s | %s | %s | %s | %s |"
                       % (s["model"], s["batch"], s["mode"], fmt(s["iteration_ms"], 2),
                          fmt(s["conv_sum_ms"], 2),
                          " (%d items missing)" % s["missing_items"] if s["missing_items"] else "",
                          fmt(s["profiler_conv_ms"], 2), fmt(s["ratio"]),
                          fmt(s.get("matmul_sum_ms"), 2),
                          " (%d items missing)" % mm_missing if mm_missing else "",
                          fmt(s.get("profiler_gemm_ms"), 2), fmt(s.get("matmul_ratio")),
                          fmt(s.get("sm_clock_mhz"), 0), fmt(s.get("power_w"), 0)))
        out.append("")
        out.append("Goal: the conv sum within 5 % of the profiler's conv time (the profiler's "
                   "conv time is the device time of the kernels the conv ops launched, each "
                   "counted once). The matmul sum is set beside the profiler's gemm time (the "
                   "kernels of addmm, mm, bmm, linear and matmul and their backward nodes), "
                   "which also holds a Linear's bias added after an mm; a model without matmuls "
                   "reads – there.")
    return "\n".join(out) + "\n"


def part_report(a):
    rows = []
    if os.path.exists(a.jsonl):
        with open(a.jsonl) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a kill
    text = report(rows)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("part", choices=["facts", "convs", "matmuls", "numerics", "step", "report"])
    p.add_argument("--jsonl", required=True)
    p.add_argument("--agent")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--work", default=".")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"])
    p.add_argument("--amp", default="none", choices=["fp16", "bf16", "none"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--input-size", type=int, default=224)
    p.add_argument("--scale", type=int, default=1,
                   help="divide the convs' sizes and the matmuls' rows by this")
    p.add_argument("--budget-ms", type=float, default=300)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600, help="seconds for one agent call")
    p.add_argument("--out")
    a = p.parse_args(argv)
    if a.part == "report":
        return part_report(a)
    if a.part != "facts" and not a.agent:
        p.error("--agent is needed for the %s part" % a.part)
    os.makedirs(a.work, exist_ok=True)
    if a.device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            log("PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
            return 1
    out = Lines(a.jsonl)
    return {"facts": part_facts, "convs": part_convs, "matmuls": part_matmuls,
            "numerics": part_numerics, "step": part_step}[a.part](a, out)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError, ValueError) as e:
        log("failed: %s" % e)
        sys.exit(1)
