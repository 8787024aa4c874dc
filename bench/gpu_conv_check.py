#!/usr/bin/env python3
"""bench/gpu_conv_check.py: does the agent time what PyTorch computes on a GPU?

Two figures, for deploy/gpu-check.sh (which runs this on a GPU, or on the
CPU device in its rehearsal):

1. Conv by conv. A dozen convs of the CNN set (3x3, 1x1, 7x7 stride 2,
   depthwise 3x3 and 5x5 and 7x7, grouped, layers with a bias) at one batch,
   in fp32 as PyTorch computes it by default and under AMP (fp16 convs):
     A  the agent's benchmark of each direction (`agent bench --convs
        --json`, on the path PyTorch takes, cuDNN or its own kernels, with
        the heuristic policy PyTorch uses with cudnn.benchmark off);
     B  PyTorch's own call of the same conv: aten::convolution for the
        forward, aten::convolution_backward for the input gradient only
        (backward-data) or the weight and bias gradients only
        (backward-filter), the ops autograd calls, each timed between CUDA
        events after a spin, its inputs rotated through copies larger than
        the L2 cache, the median of --reps calls (the same timing discipline
        as the agent's, so that the ratio compares what runs, not how it is
        timed); also the mean of the same calls back to back, for scale.
   The ratio A/B per conv and direction, and their median and spread.

2. One training step. The model's predicted conv time (the agent's
   benchmarks summed with common/wire/tc_conv_step.h's rule: forward,
   backward-filter, and backward-data except for the first conv, times
   multiplicity) against the conv time PyTorch's profiler attributes to a
   traced step (agent/harness/trace_runner.py --profile 1), in fp32 and
   under AMP.

Writes a Markdown section (--report) and every figure as JSON (--json).
Exit status 0 when everything ran (the figures are reported, not judged),
1 when something failed.

usage: gpu_conv_check.py --agent AGENT --device cuda:0|cpu --work DIR
         [--batch 32] [--model resnet18] [--input-size 224] [--scale 1]
         [--amp fp16|none] [--budget-ms 300] [--reps 30] [--threads N]
         [--report FILE.md] [--json FILE.json]
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(REPO, "agent", "harness")
sys.path.insert(0, HARNESS)

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
DIRS = ("fwd", "bwd_data", "bwd_filter")
KEYS = ("c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w", "dilation_h",
        "dilation_w", "groups", "bias")


def log(msg):
    sys.stderr.write("gpu_conv_check: %s\n" % msg)
    sys.stderr.flush()


def run(cmd, timeout):
    log(" ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (cmd[0], p.returncode,
                                                 (p.stderr or p.stdout)[-800:]))
    return p.stdout


def key_of(d):
    return tuple(int(d[k]) if k != "bias" else bool(d[k]) for k in KEYS)


def scaled(conv, scale):
    name, c, h, k, r, stride, pad, groups, bias, first = conv
    h = max(r, h // scale) if scale > 1 else h
    return name, c, h, k, r, stride, pad, groups, bias, first


def conv_dict(conv, n):
    name, c, h, k, r, stride, pad, groups, bias, first = conv
    return {"n": n, "c": c, "h": h, "w": h, "k": k, "r": r, "s": r, "pad_h": pad, "pad_w": pad,
            "stride_h": stride, "stride_w": stride, "dilation_h": 1, "dilation_w": 1,
            "groups": groups, "bias": bias}


def agent_bench(a, convs, dtype, tag):
    """The agent's time per (conv key, direction) in ms, and its routes."""
    path = os.path.join(a.work, "dozen.convs")
    with open(path, "w") as f:
        f.write("model gpu-check\n")
        for conv in convs:
            name, c, h, k, r, stride, pad, groups, bias, first = conv
            f.write("%d %d %d %d %d %d %d %d %d %d 1 1 %d 1 %d %d\n"
                    % (c, h, h, k, r, r, pad, pad, stride, stride, groups, int(first),
                       int(bias)))
    out = os.path.join(a.work, "agent-%s.jsonl" % tag)
    tcr = os.path.join(a.work, "agent-%s.tcr" % tag)
    for p in (out, tcr):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [a.agent, "bench", "--convs", path, "--batches", str(a.batch), "--device", a.device,
           "--dtype", dtype, "--budget-ms", str(a.budget_ms), "--out", tcr, "--json", out]
    if a.device == "cpu":
        cmd += ["--threads", str(a.threads)]
    run(cmd, 1800)
    return read_jsonl(out)


def read_jsonl(path):
    times, routes = {}, {}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            key = (key_of(d), d["direction"])
            times[key] = d["median_ms"]
            routes[key] = (d["route"], d["algo"], d.get("sm_clock_mhz", 0), d.get("power_w", 0))
    return times, routes


class Timer:
    """PyTorch's own call of one conv direction, timed as the agent times."""

    def __init__(self, torch, device):
        self.torch = torch
        self.dev = torch.device(device)
        self.cuda = self.dev.type == "cuda"
        self.l2 = 0
        if self.cuda:
            props = torch.cuda.get_device_properties(self.dev)
            self.l2 = getattr(props, "L2_cache_size", 0) or 64 << 20

    def time(self, d, direction, dtype, reps):
        t = self.torch
        dt = {"fp16": t.float16, "bf16": t.bfloat16}.get(dtype, t.float32)
        x = t.randn(d["n"], d["c"], d["h"], d["w"], device=self.dev, dtype=dt)
        w = t.randn(d["k"], d["c"] // d["groups"], d["r"], d["s"], device=self.dev, dtype=dt)
        b = t.randn(d["k"], device=self.dev, dtype=dt) if d["bias"] else None
        stride, pad = [d["stride_h"], d["stride_w"]], [d["pad_h"], d["pad_w"]]
        dil, groups = [1, 1], d["groups"]
        y = t.ops.aten.convolution(x, w, b, stride, pad, dil, False, [0, 0], groups)
        read = (x.numel() if direction != "bwd_data" else 0) + \
            (y.numel() if direction != "fwd" else 0)
        copies = 1
        if self.cuda:
            copies = max(1, min(16, math.ceil(2 * self.l2 / (read * x.element_size()))))
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

        for i in range(5):
            call(sets[i % copies])
        samples = []
        if self.cuda:
            t.cuda.synchronize()
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            for i in range(reps):
                t.cuda._sleep(100000)
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


def conv_by_conv(a, torch, convs, dtype, tag):
    agent_t, routes = agent_bench(a, convs, dtype, tag)
    timer = Timer(torch, a.device)
    rows = []
    for conv in convs:
        d = conv_dict(conv, a.batch)
        for direction in DIRS:
            if direction == "bwd_data" and conv[9]:
                continue  # the first conv needs no input gradient
            key = (key_of(d), direction)
            if key not in agent_t:
                raise RuntimeError("the agent has no %s %s for %s" % (dtype, direction, conv[0]))
            torch_ms, b2b = timer.time(d, direction, dtype, a.reps)
            route, algo, mhz, watts = routes[key]
            rows.append({"conv": conv[0], "direction": direction, "dtype": dtype, "mode": tag,
                         "agent_ms": agent_t[key], "torch_ms": torch_ms,
                         "torch_back_to_back_ms": b2b, "ratio": agent_t[key] / torch_ms,
                         "route": route, "algo": algo, "sm_clock_mhz": mhz, "power_w": watts})
    return rows


def summary(rows):
    r = sorted(x["ratio"] for x in rows)
    if not r:
        return {}
    within = sum(1 for x in r if 0.90 <= x <= 1.10)
    return {"n": len(r), "median": statistics.median(r), "min": r[0], "max": r[-1],
            "within_10pct": within / len(r)}


def traced_step(a, amp):
    """Predicted conv sum of a.model against the profiler's conv time of a
    traced step, fp32 (amp None) or under AMP."""
    tag = "amp-" + amp if amp else "fp32"
    spec = "torchvision:" + a.model
    describe = json.loads(run([a.agent, "model", "describe", spec, "--batch", str(a.batch),
                               "--input-size", str(a.input_size), "--format", "json"], 900))
    out = os.path.join(a.work, "model-%s.jsonl" % tag)
    tcr = os.path.join(a.work, "model-%s.tcr" % tag)
    for p in (out, tcr):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [a.agent, "bench", "--models", spec, "--input-size", str(a.input_size), "--batches",
           str(a.batch), "--device", a.device, "--dtype", amp or "fp32", "--budget-ms",
           str(a.budget_ms), "--out", tcr, "--json", out]
    if a.device == "cpu":
        cmd += ["--threads", str(a.threads)]
    run(cmd, 3600)
    times, _ = read_jsonl(out)
    conv_sum = 0.0
    for u in describe["convs"]:
        c = dict(u["config"])
        key = key_of(c)
        for direction in DIRS:
            if direction == "bwd_data" and u["first_layer"]:
                continue
            if (key, direction) not in times:
                raise RuntimeError("no benchmark of %s %s" % (key, direction))
            conv_sum += u["multiplicity"] * times[(key, direction)]
    trace = [sys.executable, os.path.join(HARNESS, "trace_runner.py"), "--model", a.model,
             "--batch", str(a.batch), "--input-size", str(a.input_size), "--device", a.device,
             "--warmup", "3", "--iters", "5", "--profile", "1", "--allocator", "system"]
    if amp:
        trace += ["--amp", amp]
    if a.device == "cpu":
        trace += ["--threads", str(a.threads)]
    lines = [json.loads(x) for x in run(trace, 1800).splitlines() if x.strip()]
    iters = [x["ms"] for x in lines if x.get("type") == "iter" and not x["warmup"]]
    footer = [x for x in lines if x.get("type") == "footer"][0]
    prof_conv = footer.get("op_times_ms", {}).get("conv", 0.0)
    return {"mode": tag, "model": a.model, "batch": a.batch, "input_size": a.input_size,
            "iteration_ms": statistics.median(iters), "conv_sum_ms": conv_sum,
            "profiler_conv_ms": prof_conv,
            "ratio": conv_sum / prof_conv if prof_conv > 0 else None,
            "sm_clock_mhz": footer.get("sm_clock_mhz"), "power_w": footer.get("power_w")}


def fmt(v, digits=3):
    return "–" if v is None else ("%.*f" % (digits, v))


def report(a, rows, steps, sums, env):
    out = []
    out.append("## Conv by conv: the agent against PyTorch's own call")
    out.append("")
    out.append("Device %s, %s; batch %d%s. A = the agent's median per direction (`agent bench`, "
               "heuristic policy, on the path PyTorch takes); B = PyTorch's own call of the same "
               "op (aten::convolution / aten::convolution_backward), timed the same way (%s), "
               "median of %d calls; B2B = the mean of the same calls back to back."
               % (a.device, env, a.batch, " (sizes / %d)" % a.scale if a.scale > 1 else "",
                  "wall clock per call" if a.device == "cpu"
                  else "a spin, CUDA events, inputs rotated past L2", a.reps))
    out.append("")
    out.append("| conv | direction | mode | route | algorithm | A ms | B ms | B2B ms | A/B |")
    out.append("|---|---|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                   % (r["conv"], r["direction"], r["mode"], r["route"], r["algo"][:40],
                      fmt(r["agent_ms"], 4), fmt(r["torch_ms"], 4),
                      fmt(r["torch_back_to_back_ms"], 4), fmt(r["ratio"])))
    out.append("")
    for mode, s in sums.items():
        if s:
            out.append("A/B over %d %s conv directions: median %.3f (range %.3f to %.3f), %.0f %% "
                       "within 0.90-1.10 (goal: median 0.95-1.05, 90 %% within 0.90-1.10)."
                       % (s["n"], mode, s["median"], s["min"], s["max"],
                          100 * s["within_10pct"]))
    out.append("")
    out.append("## One training step: predicted conv sum against the profiler")
    out.append("")
    out.append("| model | batch | mode | iteration ms | conv sum ms (agent) | profiler conv ms | "
               "sum / profiler | SM MHz | W |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for s in steps:
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |"
                   % (s["model"], s["batch"], s["mode"], fmt(s["iteration_ms"], 2),
                      fmt(s["conv_sum_ms"], 2), fmt(s["profiler_conv_ms"], 2), fmt(s["ratio"]),
                      fmt(s["sm_clock_mhz"], 0), fmt(s["power_w"], 0)))
    out.append("")
    out.append("Goal: the conv sum within 5 % of the profiler's conv time. The profiler also "
               "counts the framework's work around each conv and its own cost per op.")
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--input-size", type=int, default=224)
    p.add_argument("--scale", type=int, default=1, help="divide the convs' sizes by this")
    p.add_argument("--amp", default="fp16", choices=["fp16", "bf16", "none"])
    p.add_argument("--budget-ms", type=float, default=300)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--report")
    p.add_argument("--json")
    a = p.parse_args(argv)
    a.amp = None if a.amp == "none" else a.amp
    os.makedirs(a.work, exist_ok=True)
    import torch
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    elif not torch.cuda.is_available():
        log("PyTorch sees no CUDA device")
        return 1
    env = "PyTorch %s" % torch.__version__
    if a.device != "cpu":
        env += ", cuDNN %s, %s" % (torch.backends.cudnn.version(),
                                   torch.cuda.get_device_name(torch.device(a.device)))
    convs = [scaled(c, a.scale) for c in CONVS]
    rows = conv_by_conv(a, torch, convs, "fp32", "fp32")
    sums = {"fp32": summary(rows)}
    steps = [traced_step(a, None)]
    if a.amp and a.device != "cpu":
        amp_rows = conv_by_conv(a, torch, convs, a.amp, "amp")
        sums["AMP " + a.amp] = summary(amp_rows)
        rows += amp_rows
        steps.append(traced_step(a, a.amp))
    text = report(a, rows, steps, sums, env)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "convs": rows, "summary": sums, "steps": steps}, f,
                      indent=1)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError, ValueError) as e:
        log("failed: %s" % e)
        sys.exit(1)
