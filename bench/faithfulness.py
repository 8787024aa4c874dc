#!/usr/bin/env python3
"""bench/faithfulness.py: does the agent time what PyTorch computes?

For every distinct conv of some CNNs (torchvision names or FILE.py:FUNC;
default: resnet18, resnet50, mobilenet_v2, densenet121, vgg11,
shufflenet_v2_x1_0) at one input size and batch (112 px, 8), on each thread
count (1 and 2), it compares

  A  the agent's benchmark of each conv direction (`agent bench --convs`,
     on the path PyTorch takes: oneDNN or its native im2col + GEMM), and
  B  PyTorch's own time for that single conv layer: the forward
     (torch.nn.functional.conv2d) and aten::convolution_backward, the op
     the autograd node calls, for the input gradient only (backward-data)
     or for the weight (and bias) gradients only (backward-filter), with
     the same threads and the same allocator, on a channels-last input
     where the model hands the conv one (ConvNeXt; A times it as nhwc),
     each timing with the host-phase canary around it (Canary below, as
     the agent's: taken again in a slow phase of the host;
     TRAINCAST_CANARY_SLOW sets the ratio for both sides, 0 off; how
     often it did, per round beside its times in --work, .canary, and
     over the rounds in the report),

measured A B A B ... (--rounds rounds, each side a fresh process), so that
drift of a shared machine cancels in the ratio A/B of each round; the
figure per conv and direction is the median ratio over the rounds. A round
takes every CNN in turn, and for each its B, A, D and C next to each other
(a shape that several CNNs share is timed with each), in reversed order
every other round: a CNN's sides are seconds apart, not the minutes a
round of every CNN takes, so that the ratios follow the machine's drift
within a round instead of mixing two of its moments. Per CNN
it also compares C, the conv time PyTorch's profiler attributes to convs in
a traced training step (agent/harness/trace_runner.py --profile 1, one per
round), with the agent's conv sum for that CNN (common/ops/tc_conv_step.h:
forward + backward-filter + backward-data except for the first conv, times
multiplicity). And D, the conv time inside the same training step measured
without the profiler: each Conv2d of the model runs through an autograd
function that times its forward (torch.nn.functional.conv2d) and its
backward (aten::convolution_backward with the output mask autograd asks
for, one call, as ConvolutionBackward0 makes it) with a wall clock around
the call and nothing else (`instep`, one process per round); steps with and
without those timers alternate in the process, so the timers' own cost is
measured too. A/D tells whether the gap between A and C is conv time the
benchmarks miss (cold inputs, reorders, allocations inside a real step) or
the profiler's own cost. The goal (A/D within 0.90-1.10 per CNN) is told
with A/D's spread round by round: met or missed only where A/D x exp(+-2 SE)
lies wholly on one side of each bound, else not resolved by the rounds;
next to it, how A and D of a CNN moved over the rounds (the spread of
each, and their correlation: drift they share, or noise of their own).
And the same goal on the machine's fast phase (`fast_phase`): each side
the sum over its convs of each conv's fastest round (A per conv direction,
D per conv module of the step, forward and backward), so that a machine
that runs for seconds at a time 1.6-1.9 times slower (as some do) slows
neither side's figure; told with a bootstrap over rounds and the even and
odd rounds apart.

Every step of a round keeps its result in --work (agent-, torch-, trace-,
instep-THREADS-ROUND-CNN), written whole when the step ends; with --resume
a run goes on with the rounds stored there (refused when its settings, the
machine's kind, the PyTorch version or the agent's sources differ from
theirs), so that a run cut off, or one given more --rounds later, measures
only what is missing.

Writes a Markdown report (--out) and the points of a chart (--points: torch
time against agent time, one series per thread count) for tc-plot-accuracy.

usage: faithfulness.py [--models LIST] [--input-size 112] [--batch 8]
         [--threads 1,2] [--rounds 3] [--budget-ms 120] [--max-reps 25]
         [--allocator tcmalloc] [--operands warm|cold] [--work DIR] [--resume]
         [--out FILE.md]
         [--points FILE.tsv]
         [--build-dir build]
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "agent", "harness"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpu_env  # noqa: E402
import host_canary  # noqa: E402
from machine_share import Share  # noqa: E402

MODELS = "resnet18,resnet50,mobilenet_v2,densenet121,vgg11,shufflenet_v2_x1_0"
KEYS = ("c", "h", "w", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w", "dil_h",
        "dil_w", "groups")


def build_model(name, size):
    """The model as the harness builds it for traces: torchvision NAME or a
    user's FILE.py:FUNC, seeded, in training mode."""
    import export_onnx
    return export_onnx.build_model(name, input_size=size).train()


def model_convs(torch, name, size):
    """Distinct convs of a model in first-use order: config -> count, first
    (every use reads the network input), bias."""
    # The conv lists' own rule for a channels-last conv; imported here, once
    # torch is (it reads the thread settings when first imported).
    from torchvision_convs import channels_last
    model = build_model(name, size)
    x = torch.zeros(2, 3, size, size)
    convs = {}

    def hook(mod, inputs, _out):
        inp = inputs[0]
        key = (inp.shape[1], inp.shape[2], inp.shape[3], mod.out_channels) + \
            tuple(mod.kernel_size) + tuple(mod.padding) + tuple(mod.stride) + \
            tuple(mod.dilation) + (mod.groups,)
        first = inp.data_ptr() == x.data_ptr()
        e = convs.setdefault(key, {"count": 0, "first": True, "bias": mod.bias is not None,
                                   "nhwc": channels_last(inp)})
        e["count"] += 1
        e["first"] = e["first"] and first

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return [dict(zip(KEYS, k), **v) for k, v in convs.items()]


def write_convlist(path, model, convs):
    """An agent conv list (agent bench --convs) of one model's convs."""
    with open(path, "w") as f:
        f.write("# c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups count first "
                "bias\nmodel %s\n" % model)
        for c in convs:
            f.write(" ".join(str(c[k]) for k in KEYS) + " %d %d %d%s\n"
                    % (c["count"], c["first"], c["bias"], " nhwc" if c.get("nhwc") else ""))


def cmd_convs(a):
    import torch
    torch.set_num_threads(1)
    out = {m: model_convs(torch, m, a.input_size) for m in a.models.split(",")}
    # A shape shared by models is timed with a bias on both sides if any use
    # has one: every use says so.
    biased = {key_of(c) for convs in out.values() for c in convs if c["bias"]}
    for convs in out.values():
        for c in convs:
            c["bias"] = key_of(c) in biased
    with open(a.json, "w") as f:
        json.dump(out, f)
    return 0


def key_of(c):
    return tuple(int(c[k]) for k in KEYS)


def cmd_torch(a):
    """PyTorch's own time of every distinct conv direction (one process)."""
    def fail(msg):
        sys.stderr.write(msg + "\n")
        sys.exit(1)

    cpu_env.ensure_allocator(a.allocator, True, fail)
    import torch
    torch.set_num_threads(a.threads)
    a.canary = Canary(torch, a.threads)
    with open(a.json) as f:
        models = json.load(f)
    seen, rows = set(), []
    for convs in models.values():
        for c in convs:
            k = key_of(c)
            # A config shared by models is one benchmark for the agent; time
            # it once here too (with a bias if any use has one).
            if k in seen:
                continue
            seen.add(k)
            needs_data = not all(cc["first"] for m in models.values() for cc in m
                                 if key_of(cc) == k)
            bias = c["bias"]  # every use of a shape says the same (cmd_convs)
            rows += time_conv(torch, c, a, needs_data, bias)
    with open(a.out, "w") as f:
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")
    a.canary.dump(a.out + ".canary")
    return 0


class Canary:
    """The agent's host-phase canary (agent/bench/canary.h) on PyTorch's
    side: the trace runner's (agent/harness/host_canary.py) on one thread,
    read before and after each timing. A timing around which a reading was over
    `slow` times the fastest reading so far was taken in a slow phase of the
    host: it is taken again once the canary reads fast (every 50 ms, up to
    wait_s), at most twice, as the agent measures a block again.
    TRAINCAST_CANARY_SLOW sets the ratio for both sides (0: off), and as the
    agent's, the guard off (TRAINCAST_QUIET_PCT=100) turns it off;
    TRAINCAST_QUIET_WAIT_S the wait (default 60 s)."""

    def __init__(self, torch, threads):
        env = os.environ.get
        self.torch, self.threads = torch, threads
        self.wait_s = float(env("TRAINCAST_QUIET_WAIT_S", "60"))
        guard_off = float(env("TRAINCAST_QUIET_PCT", "0") or 0) >= 100
        self.slow = 0.0 if guard_off else float(env("TRAINCAST_CANARY_SLOW", "1.3"))
        self.fastest = math.inf
        self.retaken = self.stayed_slow = 0
        self.gave_up_at = -math.inf
        self.kernel = host_canary.reader(torch)
        for _ in range(5 if self.on() else 0):
            self.read()

    def on(self):
        return self.slow > 1

    def dump(self, path):
        """What it did, for the report: PATH gets {"on", "retaken", "still_slow"}."""
        with open(path, "w") as f:
            json.dump({"on": self.on(), "retaken": self.retaken,
                       "still_slow": self.stayed_slow}, f)

    @staticmethod
    def count(path, sums):
        """SUMS ([taken again, still slow], or None) with the counts of PATH's
        dump added; SUMS unchanged where the canary was off or PATH is absent
        (a round measured before the counts were kept)."""
        try:
            with open(path) as f:
                c = json.load(f)
        except FileNotFoundError:
            return sums
        if not c["on"]:
            return sums
        return [x + c[k] for x, k in zip(sums or [0, 0], ("retaken", "still_slow"))]

    def read(self):
        """One reading in ms, on one thread (after a pause that lets the
        measured team's spinning workers sleep, as the agent's): the second
        of two in a row. The first after a large product finds the canary's
        code and operands evicted and reads up to 1.6 times the fastest on a
        quiet host (AMD EPYC family 25, 2026-12-07: 93 % of readings right
        after a 392 x 768 by 768 x 2304 product over 1.3 times the fastest of
        readings in a row; the second of two, 2 %), so every timing of a large
        op would read as a slow phase; a slow phase of the host lasts seconds
        and shows in both."""
        if self.threads > 1:
            time.sleep(0.005)
            self.torch.set_num_threads(1)
        self.kernel()
        ms = self.kernel()
        if self.threads > 1:
            self.torch.set_num_threads(self.threads)
        self.fastest = min(self.fastest, ms)
        return ms

    def is_slow(self, ms):
        return self.on() and ms > self.slow * self.fastest

    def wait(self):
        """Until a reading is fast (True), or wait_s ran out (False; then
        for five times wait_s no call waits)."""
        start = time.monotonic()
        if start - self.gave_up_at < 5 * self.wait_s:
            return False
        while self.is_slow(self.read()):
            if time.monotonic() - start >= self.wait_s:
                self.gave_up_at = time.monotonic()
                return False
            time.sleep(0.05)
        return True

    def timed(self, measure):
        """measure() with the canary around it, taken again in a slow phase."""
        if not self.on():
            return measure()
        for attempt in range(3):
            before = self.read()
            out = measure()
            if not self.is_slow(max(before, self.read())):
                return out
            if attempt == 2 or not self.wait():
                self.stayed_slow += 1
                return out
            self.retaken += 1


def median_time(fn, budget_s, max_reps, setup=None, canary=None):
    """(median, min) of timed calls, in ms: fn(), or fn(setup()) with setup
    untimed; 2 warm-ups, then at least 5 and at most max_reps within the
    budget; with a Canary around them, taken again in a slow phase."""
    def args():
        return () if setup is None else (setup(),)

    def measure():
        for _ in range(2):
            fn(*args())
        times, t_end = [], time.perf_counter() + budget_s
        while len(times) < max_reps and (len(times) < 5 or time.perf_counter() < t_end):
            x = args()
            t0 = time.perf_counter()
            fn(*x)
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), min(times)

    return canary.timed(measure) if canary else measure()


def time_conv(torch, c, a, needs_data, bias):
    """PyTorch's time for one conv layer per direction, calling the ops a
    training step calls: the forward (torch.nn.functional.conv2d, the
    module's own call) and aten::convolution_backward (what the autograd
    node ConvolutionBackward0 calls) with the output mask of one direction,
    so that no Python autograd call is timed with it."""
    stride, pad = [c["stride_h"], c["stride_w"]], [c["pad_h"], c["pad_w"]]
    dil = [c["dil_h"], c["dil_w"]]
    w = torch.randn(c["k"], c["c"] // c["groups"], c["r"], c["s"])
    b = torch.randn(c["k"]) if bias else None
    x = torch.randn(a.batch, c["c"], c["h"], c["w"])
    fmt = torch.channels_last if c.get("nhwc") else torch.contiguous_format
    x = x.contiguous(memory_format=fmt)
    key = key_of(c)
    budget = a.budget_ms / 1000.0
    f = torch.nn.functional.conv2d

    def fwd():
        f(x, w, b, stride, pad, dil, c["groups"])

    out = [key + ("fwd",) + median_time(fwd, budget, a.max_reps, canary=a.canary)]
    gy = torch.randn_like(f(x, w, b, stride, pad, dil, c["groups"]))
    gy = gy.contiguous(memory_format=fmt)
    bias_sizes = [c["k"]] if bias else None

    def backward(mask):
        return lambda: torch.ops.aten.convolution_backward(
            gy, x, w, bias_sizes, stride, pad, dil, False, [0, 0], c["groups"], mask)

    out.append(key + ("bwd_filter",) + median_time(backward([False, True, bias]), budget,
                                                   a.max_reps, canary=a.canary))
    if needs_data:
        out.append(key + ("bwd_data",) + median_time(backward([True, False, False]), budget,
                                                     a.max_reps, canary=a.canary))
    return out


def cmd_instep(a):
    """D: conv time inside real training steps, timed without the profiler.

    The step is the trace runner's (agent/harness/trace_runner.py): forward,
    cross-entropy loss, backward, SGD step, zero_grad. Timed and plain steps
    alternate (plain, timed, plain, ...) after a warm-up of both, so that the
    timers' own cost shows as the ratio of their step times. Prints one JSON
    object: medians over the timed steps of the conv forward, conv backward
    and step times, and the median plain step. With --again each conv call
    is made twice more at once and each timed apart: the second
    (conv_again_ms) with its operands warm in cache but a new output while
    the first one's is alive, the third (conv_third_ms) also writing into
    the memory the second's output just gave back, as an isolated
    benchmark's repetitions do."""
    def fail(msg):
        sys.stderr.write(msg + "\n")
        sys.exit(1)

    cpu_env.ensure_allocator(a.allocator, True, fail)
    import types
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = build_model(a.model, a.input_size)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(a.batch, 3, a.input_size, a.input_size)
    y = torch.randint(0, 1000, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    clock = time.perf_counter
    acc = {"again": 0.0, "third": 0.0, "calls": 0}
    # each conv module's own forward and backward time in the step (by its
    # index in `convs`); their sums are the step's conv time
    per = {}
    timing = {"on": False}

    class TimedConv(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inp, weight, bias, conv):
            t0 = clock()
            out = torch.nn.functional.conv2d(inp, weight, bias, conv.stride, conv.padding,
                                             conv.dilation, conv.groups)
            per["fwd"][conv.tc_index] += clock() - t0
            acc["calls"] += 1
            if a.again:
                # the same call at once, its operands now warm in cache (the
                # isolated benchmark's condition); its output is dropped
                for key in ("again", "third"):
                    # the third call takes the output memory the second just freed
                    t0 = clock()
                    torch.nn.functional.conv2d(inp, weight, bias, conv.stride, conv.padding,
                                               conv.dilation, conv.groups)
                    acc[key] += clock() - t0
            ctx.save_for_backward(inp, weight)
            ctx.conv, ctx.has_bias = conv, bias is not None
            return out

        @staticmethod
        def backward(ctx, grad_out):
            inp, weight = ctx.saved_tensors
            conv = ctx.conv
            mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1],
                    ctx.has_bias and ctx.needs_input_grad[2]]
            t0 = clock()
            gi, gw, gb = torch.ops.aten.convolution_backward(
                grad_out, inp, weight, [weight.shape[0]] if ctx.has_bias else None,
                list(conv.stride), list(conv.padding), list(conv.dilation), False, [0, 0],
                conv.groups, mask)
            per["bwd"][conv.tc_index] += clock() - t0
            if a.again:
                for key in ("again", "third"):
                    t0 = clock()
                    torch.ops.aten.convolution_backward(
                        grad_out, inp, weight, [weight.shape[0]] if ctx.has_bias else None,
                        list(conv.stride), list(conv.padding), list(conv.dilation), False,
                        [0, 0], conv.groups, mask)
                    acc[key] += clock() - t0
            return (gi if mask[0] else None), gw, (gb if mask[2] else None), None

    def forward(self, inp):
        if timing["on"]:
            return TimedConv.apply(inp, self.weight, self.bias, self)
        return self._conv_forward(inp, self.weight, self.bias)

    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    for i, m in enumerate(convs):
        if m.padding_mode != "zeros" or isinstance(m.padding, str):
            fail("instep: %s has a conv with padding %r (mode %s) this timer does not "
                 "reproduce" % (a.model, m.padding, m.padding_mode))
        m.forward = types.MethodType(forward, m)
        m.tc_index = i
    per.update(fwd=[0.0] * len(convs), bwd=[0.0] * len(convs))

    def gradients(on):
        timing["on"] = on
        opt.zero_grad()
        torch.manual_seed(1)  # the same dropout masks on both passes
        loss_fn(model(x), y).backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    # The timed convs compute what the module's own do: the same gradients
    # for every parameter (batch norm in train mode updates its running
    # statistics on both passes; the gradients do not depend on them).
    grad_diff = max(float((t - p).abs().max() / (p.abs().max() + 1e-12))
                    for p, t in zip(gradients(False), gradients(True)))
    opt.zero_grad()

    def step():
        t0 = clock()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return clock() - t0

    for _ in range(a.warmup):
        for on in (False, True):
            timing["on"] = on
            step()
    plain, timed, fwd, bwd, again, third = [], [], [], [], [], []
    mod = {"fwd": [[] for _ in convs], "bwd": [[] for _ in convs]}
    for _ in range(a.iters):
        timing["on"] = False
        plain.append(step())
        timing["on"] = True
        acc.update(again=0.0, third=0.0, calls=0)
        per.update(fwd=[0.0] * len(convs), bwd=[0.0] * len(convs))
        timed.append(step())
        for d in ("fwd", "bwd"):
            for i, t in enumerate(per[d]):
                mod[d][i].append(t)
        fwd.append(sum(per["fwd"]))
        bwd.append(sum(per["bwd"]))
        again.append(acc["again"])
        third.append(acc["third"])
    ms = lambda v: 1e3 * statistics.median(v)  # noqa: E731
    conv = [f + b for f, b in zip(fwd, bwd)]
    print(json.dumps({"model": a.model, "threads": a.threads, "convs_per_step": acc["calls"],
                      "conv_ms": ms(conv), "conv_fwd_ms": ms(fwd), "conv_bwd_ms": ms(bwd),
                      "step_timed_ms": ms(timed), "step_plain_ms": ms(plain),
                      "grad_max_rel_diff": grad_diff,
                      "module_fwd_ms": [ms(v) for v in mod["fwd"]],
                      "module_bwd_ms": [ms(v) for v in mod["bwd"]],
                      "conv_again_ms": ms(again) if a.again else None,
                      "conv_third_ms": ms(third) if a.again else None}))
    return 0


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write("faithfulness: %s failed (%d):\n%s%s\n" % (
            " ".join(cmd[:3]), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        sys.exit(1)
    return r.stdout


def write_whole(path, write):
    """write(PART) writes PATH.part, renamed to PATH when it returns: a PATH
    that exists was written whole."""
    write(path + ".part")
    os.replace(path + ".part", path)


def json_writer(obj):
    def write(part):
        with open(part, "w") as f:
            json.dump(obj, f)
    return write


def step_file(a, path, measure):
    """PATH holding a finished step of the run: with --resume the one stored
    there, else measured afresh by measure(PART) (write_whole), after
    clearing what a step cut off left."""
    if not (a.resume and os.path.exists(path)):
        for p in (path, path + ".part"):
            if os.path.exists(p):
                os.remove(p)
        write_whole(path, measure)
    return path


def agent_round(a, threads, path, convlist):
    agent = os.path.join(a.build_dir, "agent", "agent")
    step_file(a, path, lambda part: run(
        [agent, "bench", "--convs", convlist, "--batches",
         str(a.batch), "--threads", str(threads), "--allocator", a.allocator, "--budget-ms",
         str(a.budget_ms), "--max-reps", str(a.max_reps), "--operands", a.operands,
         "--out", part],
        env=dict(os.environ, TRAINCAST_PROGRESS="plain", TRAINCAST_LOG="error")))
    dump = run([os.path.join(a.build_dir, "bench", "tc-dump-results"), path])
    times, mins, algos, device = {}, {}, {}, ""
    for line in dump.splitlines():
        f = line.split("\t")
        device = f[0]
        key = tuple(int(v) for v in f[1:14])
        times[key + (f[15],)] = float(f[17])
        mins[key + (f[15],)] = float(f[18])
        algos[key + (f[15],)] = f[16]
    return times, mins, algos, device


def canary_line(counts, agent_files):
    """The report's line on the host-phase canary, from PyTorch's side's
    [taken again, still slow] over the rounds (None: off, or not counted);
    AGENT_FILES names where the agent's own counts are."""
    return ("The host-phase canary (TRAINCAST_CANARY_SLOW, default 1.3; docs/conv-benchmarks.md) "
            "on both sides: PyTorch's side %s; the agent's are in its %s in --work "
            "(`remeasured`, `host_slow`)." % (
                "took %d timings again over the rounds, %d stayed slow" % tuple(counts)
                if counts else "off (TRAINCAST_CANARY_SLOW=0, or the guard off: "
                "TRAINCAST_QUIET_PCT=100), or not counted (rounds measured before the counts "
                "were kept)", agent_files))


def torch_round(a, threads, path, convs_json):
    def measure(part):
        run([sys.executable, os.path.abspath(__file__), "torch", "--json", convs_json,
             "--threads", str(threads), "--batch", str(a.batch),
             "--allocator", a.allocator, "--budget-ms", str(a.budget_ms), "--max-reps",
             str(a.max_reps), "--out", part])
        os.replace(part + ".canary", path + ".canary")

    step_file(a, path, measure)
    a.torch_canary = Canary.count(path + ".canary", a.torch_canary)
    times, mins = {}, {}
    with open(path) as f:
        for line in f:
            v = line.rstrip("\n").split("\t")
            times[tuple(int(x) for x in v[:13]) + (v[13],)] = float(v[14])
            mins[tuple(int(x) for x in v[:13]) + (v[13],)] = float(v[15])
    return times, mins


def trace_round(a, threads, model, path):
    def measure(part):
        out = run([sys.executable, os.path.join(REPO, "agent", "harness", "trace_runner.py"),
                   "--model", model, "--batch", str(a.batch), "--input-size",
                   str(a.input_size), "--threads", str(threads), "--warmup", "2", "--iters",
                   "2", "--profile", "1", "--allocator", a.allocator])
        conv = float("nan")
        for line in out.splitlines():
            obj = json.loads(line)
            if obj.get("type") == "footer":
                conv = obj.get("op_times_ms", {}).get("conv", float("nan"))
        json_writer({"conv_ms": conv})(part)
    with open(step_file(a, path, measure)) as f:
        return json.load(f)["conv_ms"]


def instep_round(a, threads, model, path):
    def measure(part):
        out = run([sys.executable, os.path.abspath(__file__), "instep", "--model", model,
                   "--batch", str(a.batch), "--input-size", str(a.input_size), "--threads",
                   str(threads), "--allocator", a.allocator])
        json_writer(json.loads(out.strip().splitlines()[-1]))(part)
    with open(step_file(a, path, measure)) as f:
        return json.load(f)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def pct(v):
    return "%.1f %%" % (100 * v)


def step_keys(c):
    """The keys (conv + direction) a conv adds to a step by the conv-time rule
    (common/ops/tc_conv_step.h): forward and backward-filter, and
    backward-data unless it is the first layer."""
    k = key_of(c)
    return [k + (d,) for d in ("fwd", "bwd_filter") + (() if c["first"] else ("bwd_data",))]


def step_items(times, convs):
    """The agent's items of a step by the conv-time rule: (count, the times
    of every round) for each conv direction, from `times` (key + direction ->
    one time per round; none where it has no time)."""
    return [(c["count"], times.get(k) or []) for c in convs for k in step_keys(c)]


def round_sum(times, convs, r):
    """The agent's conv sum of round r (the conv-time rule, as the per-CNN
    table's A), from `times` (key + direction -> one time per round); None
    when a direction has no time in that round."""
    items = step_items(times, convs)
    if any(len(v) <= r for _, v in items):
        return None
    return fastest_sum(items, [r])


def instep_verdict(ratio, per_round, lo=0.90, hi=1.10, z=2.0):
    """The in-step goal for one CNN: its A/D (`ratio`) against lo..hi, told
    with the spread of the same ratio round by round (`per_round`, A_r/D_r).
    Returns (se, verdict): se, the standard error of the ratio's logarithm
    over the rounds (None with fewer than two); verdict "met" or "missed"
    where the band ratio x exp(+-z se) lies wholly inside or wholly outside
    lo..hi, else "not resolved" (also with fewer than two rounds, when the
    ratio's own spread is unknown)."""
    logs = [math.log(r) for r in per_round if r > 0]
    if len(logs) < 2:
        return None, "not resolved"
    se = statistics.stdev(logs) / math.sqrt(len(logs))
    return se, band_verdict(ratio, se, lo, hi, z)


def band_verdict(ratio, se, lo=0.90, hi=1.10, z=2.0):
    """"met" where ratio x exp(+-z se) lies wholly inside lo..hi, "missed"
    where wholly outside, else "not resolved"."""
    low, high = ratio * math.exp(-z * se), ratio * math.exp(z * se)
    if lo <= low and high <= hi:
        return "met"
    if high < lo or low > hi:
        return "missed"
    return "not resolved"


def fastest_sum(items, rounds):
    """Each item's fastest figure over the given rounds, weighted and summed:
    `items` is a list of (weight, figure of round 0, 1, ...)."""
    return sum(w * min(v[r] for r in rounds) for w, v in items)


def fast_phase(a_items, d_items, n, resamples=2000, seed=1):
    """A/D on the machine's fast phase: each side the sum over its convs of
    each conv's fastest round (`fastest_sum`; A's items are the agent's conv
    directions, weighted by their count in the step, each a median over
    repetitions; D's the conv modules' forward and backward in the step, each
    a median over the timed steps), over the n rounds. A conv that ran in a
    slow phase of the machine in some rounds counts with a round it did not,
    on each side, so slow phases drop out where a round-by-round ratio
    cannot pair them. Returns the ratio; the standard error of its logarithm
    from a bootstrap over rounds (the same rounds drawn for both sides; for
    a minimum this is a rough guide); its verdict (`band_verdict`); and the
    ratio from the even and from the odd rounds alone. None with fewer than
    two rounds."""
    if n < 2:
        return None
    rng = random.Random(seed)
    every = range(n)
    a_ms, d_ms = fastest_sum(a_items, every), fastest_sum(d_items, every)
    logs = []
    for _ in range(resamples):
        pick = [rng.randrange(n) for _ in every]
        logs.append(math.log(fastest_sum(a_items, pick) / fastest_sum(d_items, pick)))
    se = statistics.stdev(logs)
    halves = tuple(fastest_sum(a_items, range(h, n, 2)) / fastest_sum(d_items, range(h, n, 2))
                   for h in (0, 1))
    return {"ratio": a_ms / d_ms, "se": se, "verdict": band_verdict(a_ms / d_ms, se),
            "halves": halves, "a_ms": a_ms, "d_ms": d_ms}


def fast_items(res, m, convs):
    """The items of `fast_phase` for CNN m: the agent's conv directions of
    the conv-time rule (weighted by count) and the in-step conv modules'
    forward and backward, each with its figure of every round, and the
    number of rounds; no rounds where a side lacks one."""
    steps = res["instep"][m]
    n = len(steps)
    a_items = step_items(res["agent_by"][m], convs)
    if any(len(v) != n for _, v in a_items):
        return [], [], 0
    d_items = [(1, [r["module_%s_ms" % d][i] for r in steps]) for d in ("fwd", "bwd")
               for i in range(len(steps[0]["module_fwd_ms"]) if steps else 0)]
    return a_items, d_items, n


def round_order(models, r):
    """The order of round r: every CNN in turn, and for each its four
    measurements next to each other, B A D C, with A between the two it is
    compared with; every other round the whole order reversed (C D A B, the
    last CNN first), so that a drift of the machine over a round shifts A
    against B and D one way in one round and the other way in the next."""
    steps = [(m, what) for m in models for what in ("torch", "agent", "instep", "trace")]
    return steps if r % 2 == 0 else steps[::-1]


def round_spread(a_rounds, d_rounds):
    """How a CNN's two in-step sides move over the rounds: the standard
    deviation of log A_r and of log D_r, and their correlation. Sides that
    move together (a high correlation) share the machine's drift, which
    the ratio cancels; sides that move apart are noisy within the seconds
    between them, which only more time per side or more rounds averages.
    None for each figure with fewer than two rounds, and for the
    correlation with fewer than three (two points always correlate +-1) or
    when either side did not move."""
    la = [math.log(v) for v in a_rounds]
    ld = [math.log(v) for v in d_rounds]
    if len(la) < 2 or len(la) != len(ld):
        return None, None, None
    sa, sd = statistics.stdev(la), statistics.stdev(ld)
    corr = statistics.correlation(la, ld) if len(la) > 2 and sa > 0 and sd > 0 else None
    return sa, sd, corr


ROUND_FILES = ("agent-", "torch-", "trace-", "instep-")


def agent_sources(build_dir):
    """The agent's build, named by its sources: git's tree hashes of agent/
    and common/ in the checkout the build was configured from (its
    CMakeCache), "+uncommitted" where they hold changes not committed. The
    same sources give the same name on every machine and path (a hash of the
    binary would not: it holds its source paths). "unknown" where the build
    or git cannot say (then a resume cannot tell builds apart). The build
    itself may be older than its checkout: rebuild before a resume."""
    src = None
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
    except OSError:
        return "unknown"

    def git(*args):
        r = subprocess.run(["git", "-C", src] + list(args), capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    trees = git("rev-parse", "HEAD:agent", "HEAD:common") if src else None
    if not trees:
        return "unknown"
    name = "agent %s common %s" % tuple(t[:12] for t in trees.split())
    return name + (" +uncommitted" if git("status", "--porcelain", "--", "agent", "common")
                   else "")


def machine_kind():
    """This machine's kind, as the studies name it (bench/lib.sh,
    bench_machine_kind): a ratio or a stored round holds on its kind."""
    return run(["bash", "-c", '. "$1" && bench_machine_kind', "faithfulness",
                os.path.join(REPO, "bench", "lib.sh")]).strip()


def run_settings(a):
    """What a resumed run must share with the rounds stored in its --work:
    every measuring setting, the machine's kind (bench/lib.sh,
    bench_machine_kind: another kind runs the same conv at another speed),
    the PyTorch that B, C and D run and the agent's build (agent_sources);
    not --rounds, which may grow."""
    torch = run([sys.executable, "-c", "import torch, torchvision; "
                 "print(torch.__version__, torchvision.__version__)"]).strip()
    return {"models": a.models, "input_size": a.input_size, "batch": a.batch,
            "threads": a.threads, "budget_ms": a.budget_ms, "max_reps": a.max_reps,
            "allocator": a.allocator, "operands": a.operands, "machine": machine_kind(),
            "pytorch": torch, "agent": agent_sources(a.build_dir)}


def settle_work(a):
    """Makes --work hold this run's settings. With --resume, a work directory
    whose stored settings differ is refused, each difference by name; else
    every stored round is cleared, for the rounds to be measured afresh."""
    path = os.path.join(a.work, "settings.json")
    now = run_settings(a)
    if a.resume and os.path.exists(path):
        with open(path) as f:
            was = json.load(f)
        diff = [k for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k)]
        if diff:
            sys.stderr.write("faithfulness: %s holds rounds measured with other settings; "
                             "its rounds and these would not be one run:\n" % a.work)
            for k in diff:
                sys.stderr.write("  %s: stored %s, now %s\n" % (k, was.get(k, "(none)"),
                                                                now.get(k, "(none)")))
            sys.stderr.write("rerun with the stored settings to resume (--rounds may grow), "
                             "or without --resume to start over\n")
            sys.exit(2)
        done = sum(n.startswith("instep-") and n.endswith(".json") for n in os.listdir(a.work))
        sys.stderr.write("faithfulness: resuming %s: %d CNN round(s) stored\n" % (a.work, done))
    else:
        if a.resume:
            sys.stderr.write("faithfulness: %s holds no settings to resume; starting over\n"
                             % a.work)
        for n in os.listdir(a.work):
            if n.startswith(ROUND_FILES):
                os.remove(os.path.join(a.work, n))
    write_whole(path, json_writer(now))


def cmd_run(a):
    os.makedirs(a.work, exist_ok=True)
    settle_work(a)
    t_start = time.time()
    run([sys.executable, os.path.abspath(__file__), "convs", "--models", a.models,
         "--input-size", str(a.input_size), "--json", os.path.join(a.work, "convs.json")])
    with open(os.path.join(a.work, "convs.json")) as f:
        models = json.load(f)
    # One conv list and one PyTorch list per CNN, so that each CNN's sides are
    # measured next to each other; a shape shared by CNNs is timed in each.
    files = {}
    for i, (m, convs) in enumerate(models.items()):
        files[m] = (os.path.join(a.work, "convs-%d.txt" % i),
                    os.path.join(a.work, "convs-%d.json" % i), i)
        write_convlist(files[m][0], m, convs)
        with open(files[m][1], "w") as f:
            json.dump({m: convs}, f)
    loads = [loadavg()]
    share = Share()
    results = {}
    for threads in [int(t) for t in a.threads.split(",")]:
        ratios, min_ratios, agent_t, torch_t = {}, {}, {}, {}
        a.torch_canary = None  # [taken again, still slow] where it ran
        agent_by, torch_by = {m: {} for m in models}, {m: {} for m in models}
        prof, instep = {m: [] for m in models}, {m: [] for m in models}
        algos, device = {}, ""
        for r in range(a.rounds):
            sys.stderr.write("faithfulness: %d thread(s), round %d of %d\n"
                             % (threads, r + 1, a.rounds))
            at, amin, tt, tmin = {}, {}, {}, {}
            for m, what in round_order(models, r):
                convlist, convs_json, i = files[m]
                if what == "agent":
                    at[m], amin[m], al, device = agent_round(a, threads, os.path.join(
                        a.work, "agent-%d-%d-%d.tcr" % (threads, r, i)), convlist)
                    algos.update(al)
                elif what == "torch":
                    tt[m], tmin[m] = torch_round(a, threads, os.path.join(
                        a.work, "torch-%d-%d-%d.tsv" % (threads, r, i)), convs_json)
                elif what == "trace":
                    prof[m].append(trace_round(a, threads, m, os.path.join(
                        a.work, "trace-%d-%d-%d.json" % (threads, r, i))))
                else:
                    instep[m].append(instep_round(a, threads, m, os.path.join(
                        a.work, "instep-%d-%d-%d.json" % (threads, r, i))))
            for m in models:
                for k, v in at[m].items():
                    agent_by[m].setdefault(k, []).append(v)
                    if k in tt[m]:
                        torch_by[m].setdefault(k, []).append(tt[m][k])
                        ratios.setdefault(k, []).append(v / tt[m][k])
                        min_ratios.setdefault(k, []).append(amin[m][k] / tmin[m][k])
                        agent_t.setdefault(k, []).append(v)
                        torch_t.setdefault(k, []).append(tt[m][k])
            loads.append(loadavg())
        results[threads] = dict(ratios=ratios, min_ratios=min_ratios, agent=agent_t,
                                torch=torch_t, agent_by=agent_by, torch_by=torch_by, prof=prof,
                                instep=instep, algos=algos, device=device,
                                others=share.others(), torch_canary=a.torch_canary)
    write_report(a, models, results, loads, time.time() - t_start, share.others())
    return 0


def route(algo):
    return "native" if algo.startswith("pytorch-native") else "oneDNN"


def write_report(a, models, results, loads, secs, others):
    lines = ["# Faithfulness: the agent's conv benchmarks against PyTorch's own time", ""]
    lines += [
        "*Written by `bench/faithfulness.py` (`deploy/bench.sh --only faithfulness`); %s, %.0f s%s,"
        " load average (1, 5, 15 min) %s.*" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                              secs, " (this part of a run resumed from the rounds"
                                              " stored in its work directory)" if a.resume else "",
                                              " -> ".join(loads)), "",
        "Every distinct conv of %s at %d px, batch %d. For each conv and direction: the agent's "
        "benchmark (A, `agent bench`, on the path PyTorch takes) and PyTorch's own time for that "
        "one layer (B: `torch.nn.functional.conv2d`, and `aten::convolution_backward`, the op the "
        "autograd node calls, for the input gradient only or for the weight and bias gradients "
        "only), same threads, allocator `%s`, the agent's operands %s, measured in %d rounds "
        "(fresh processes), each CNN's B, A, D and C next to each other (a shape shared by CNNs "
        "timed with each), the order reversed every other round; the figure is the median over "
        "rounds (and CNNs) of A/B. Per CNN: the "
        "agent's conv sum (the conv-time rule of `common/ops/tc_conv_step.h`) against the conv time "
        "PyTorch's profiler attributes to convs in one traced step (one per round, median)."
        % (", ".join(models), a.input_size, a.batch, a.allocator, a.operands, a.rounds), "",
        "Goals: median ratio 0.95-1.05 and 90 % of the convs within 0.85-1.15 on each thread "
        "count; per CNN conv sum within 5 %.", ""]
    if a.plot_link:
        lines += ["![agent benchmark against PyTorch's time per conv and direction](%s)"
                  % a.plot_link, ""]
    points = []
    for threads, res in results.items():
        med = {k: statistics.median(v) for k, v in res["ratios"].items()}
        vals = sorted(med.values())
        if not vals:
            continue
        within = sum(0.85 <= v <= 1.15 for v in vals) / len(vals)
        mins = sorted(statistics.median(v) for v in res["min_ratios"].values())
        lines += ["## %d thread%s" % (threads, "" if threads == 1 else "s"), "",
                  "Device: `%s`. Other processes used %.0f %% of the machine up to the end of "
                  "this part." % (res["device"], 100 * res["others"]), "",
                  canary_line(res["torch_canary"], "result files"), "",
                  "| conv directions | median A/B | within 0.85-1.15 | 10th-90th percentile | "
                  "fastest calls: median min(A)/min(B), within 0.85-1.15 |",
                  "|---|---|---|---|---|",
                  "| %d | %.3f | %s | %.3f - %.3f | %.3f, %s |" % (
                      len(vals), statistics.median(vals), pct(within),
                      vals[int(0.1 * (len(vals) - 1))], vals[int(0.9 * (len(vals) - 1))],
                      statistics.median(mins), pct(sum(0.85 <= v <= 1.15 for v in mins)
                                                   / len(mins))), ""]
        mv = statistics.median(vals)
        cnn_ok = 0
        for m, convs in models.items():
            ta = tb = 0.0
            for c in convs:
                for k in step_keys(c):
                    if k in res["agent_by"][m] and k in res["torch_by"][m]:
                        ta += c["count"] * statistics.median(res["agent_by"][m][k])
                        tb += c["count"] * statistics.median(res["torch_by"][m][k])
            cnn_ok += tb > 0 and abs(ta / tb - 1) <= 0.05
        lines += ["Goals: median ratio 0.95-1.05 %s; 90 %% within 0.85-1.15 %s; conv sum within "
                  "5 %% of PyTorch's per-layer sum for %d of %d CNNs." % (
                      "met" if 0.95 <= mv <= 1.05 else "missed",
                      "met" if within >= 0.9 else "missed", cnn_ok, len(models)), ""]
        lines += ["| path | direction | n | median A/B | within 0.85-1.15 |", "|---|---|---|---|---|"]
        groups = {}
        for k, v in med.items():
            groups.setdefault((route(res["algos"].get(k, "")), k[-1]), []).append(v)
        for (rt, d), vs in sorted(groups.items()):
            lines.append("| %s | %s | %d | %.3f | %s |" % (
                rt, d, len(vs), statistics.median(vs),
                pct(sum(0.85 <= v <= 1.15 for v in vs) / len(vs))))
        lines.append("")
        worst = sorted(med.items(), key=lambda kv: -abs(kv[1] - 1))[:8]
        lines += ["Furthest from 1:", "",
                  "| conv (c h w k r s pad stride dil groups) | direction | path | agent ms | "
                  "PyTorch ms | A/B |", "|---|---|---|---|---|---|"]
        for k, v in worst:
            lines.append("| %s | %s | %s | %.3f | %.3f | %.3f |" % (
                "%d %dx%d k%d %dx%d p%d s%d d%d g%d" % (k[0], k[1], k[2], k[3], k[4], k[5], k[6],
                                                       k[8], k[10], k[12]),
                k[13], route(res["algos"].get(k, "")), statistics.median(res["agent"][k]),
                statistics.median(res["torch"][k]), v))
        lines += ["", "Per CNN: A, the agent's conv sum; B, the same sum of PyTorch's per-layer "
                  "times; C, the profiler's conv time in a traced step (which includes the "
                  "profiler's own cost per recorded op); D, the conv time inside the same "
                  "training step timed without the profiler (a wall clock around each conv "
                  "call, forward and backward; median of 10 steps, median over rounds); "
                  "*timers*: the step time with those timers over the step without them, "
                  "alternating in one process (their own cost).", "",
                  "| CNN | A: agent ms | B: PyTorch per layer ms | C: profiler ms | "
                  "D: in-step ms | A/B | A/C | A/D | A/D by round | SE | verdict | timers |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        instep_ok = 0
        told = {"met": 0, "missed": 0, "not resolved": 0}
        spreads, fasts = [], []
        for m, convs in models.items():
            total, tsum, missing = 0.0, 0.0, 0
            for c in convs:
                for k in step_keys(c):
                    v, w = res["agent_by"][m].get(k), res["torch_by"][m].get(k)
                    if v is None or w is None:
                        missing += 1
                    else:
                        total += c["count"] * statistics.median(v)
                        tsum += c["count"] * statistics.median(w)
            p = statistics.median(res["prof"][m])
            d = statistics.median(r["conv_ms"] for r in res["instep"][m])
            cost = statistics.median(r["step_timed_ms"] / r["step_plain_ms"]
                                     for r in res["instep"][m])
            # the same ratio round by round: the agent's sum of round r over D of round r
            per_round, a_rounds, d_rounds = [], [], []
            for r, step in enumerate(res["instep"][m]):
                ar = round_sum(res["agent_by"][m], convs, r)
                if ar is not None and ar > 0 and step["conv_ms"] > 0:
                    per_round.append(ar / step["conv_ms"])
                    a_rounds.append(ar)
                    d_rounds.append(step["conv_ms"])
            spreads.append((m, round_spread(a_rounds, d_rounds)))
            fasts.append((m, fast_phase(*fast_items(res, m, convs))))
            se, verdict = instep_verdict(total / d, per_round)  # none by round if any is missing
            told[verdict] += 1
            instep_ok += not missing and abs(total / d - 1) <= 0.10
            lines.append("| %s | %.1f%s | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %s | %s | %s "
                         "| %.3f |" % (
                             m, total, " (%d missing)" % missing if missing else "", tsum, p, d,
                             total / tsum if tsum else float("nan"), total / p, total / d,
                             " ".join("%.3f" % x for x in per_round),
                             "%.1f %%" % (100 * se) if se is not None else "-", verdict, cost))
        lines += ["", "Goal: the agent's conv sum within 10 %% of the conv time inside the step "
                  "(A/D in 0.90-1.10) for every CNN: %s (%d of %d). Told with the spread of A/D "
                  "over the %d rounds (SE: the standard error of its logarithm; a verdict where "
                  "A/D x exp(+-2 SE) lies wholly inside or outside 0.90-1.10): %d met, %d missed, "
                  "%d not resolved by these rounds." % (
                      "met" if instep_ok == len(models) else "missed", instep_ok, len(models),
                      a.rounds, told["met"], told["missed"], told["not resolved"]),
                  ""]
        fig = lambda v, f, scale=1: "-" if v is None else f % (scale * v)  # noqa: E731
        lines += ["How each CNN's two sides moved over the rounds: the standard deviation of "
                  "log A and of log D round by round, and their correlation. Sides that move "
                  "together share the machine's drift, which A/D cancels; sides that move apart "
                  "are noisy within the seconds between them, and only more time per side or "
                  "more rounds tell their ratio better.", "",
                  "| CNN | sd of log A by round | sd of log D by round | correlation |",
                  "|---|---|---|---|"]
        for m, (sa, sd, corr) in spreads:
            lines.append("| %s | %s | %s | %s |" % (
                m, fig(sa, "%.1f %%", 100), fig(sd, "%.1f %%", 100),
                fig(corr, "%+.2f")))
        lines += ["", "The same goal on the machine's fast phase: each side the sum over its "
                  "convs of each conv's fastest round (A: the agent's median over repetitions of "
                  "each conv direction, times its count in the step; D: each conv module's "
                  "forward and backward inside the step, median over the timed steps), so that a "
                  "conv that ran in a slow phase of the machine in some rounds counts with a "
                  "round it did not, on both sides alike. SE: the standard error of log A/D from "
                  "a bootstrap over rounds (the same rounds drawn for both sides; rough for a "
                  "minimum); the verdict as above; next to it the ratio from the even and from "
                  "the odd rounds alone.", "",
                  "| CNN | A: fastest ms | D: fastest ms | A/D | even rounds | odd rounds | SE "
                  "| verdict |", "|---|---|---|---|---|---|---|---|"]
        fast_told = {"met": 0, "missed": 0, "not resolved": 0}
        for m, f in fasts:
            if f is None:
                lines.append("| %s | - | - | - | - | - | - | not resolved |" % m)
                fast_told["not resolved"] += 1
                continue
            fast_told[f["verdict"]] += 1
            lines.append("| %s | %.1f | %.1f | %.3f | %.3f | %.3f | %.1f %% | %s |" % (
                m, f["a_ms"], f["d_ms"], f["ratio"], f["halves"][0], f["halves"][1],
                100 * f["se"], f["verdict"]))
        lines += ["", "On the fast phase: %d met, %d missed, %d not resolved by these rounds."
                  % (fast_told["met"], fast_told["missed"], fast_told["not resolved"]), ""]
        for k, v in med.items():
            points.append("%d thread%s\t%s\t%d\t%.6f\t%.6f" % (
                threads, "" if threads == 1 else "s", k[13], a.batch,
                statistics.median(res["torch"][k]), statistics.median(res["agent"][k])))
    ncpu = os.cpu_count() or 1
    lines += ["## Reading these figures", "",
              "- What the agent leaves out: the dispatcher and autograd cost of each conv call "
              "(measured at 4 to 8 microseconds per call and direction in a training step on "
              "this project's VMs: it shows as ratios below 1 for the smallest convs, depthwise "
              "and late 1x1 layers).",
              "- The profiler's conv time (C) includes the profiler's own cost per recorded op; "
              "for CNNs of many small convs (mobilenet_v2, shufflenet) it exceeds the sum of the "
              "unprofiled per-layer times (B) by that much.",
              "- Shared machines: a process that is preempted mid-call pays a scheduler time "
              "slice (about 4 ms here), and an OpenMP team of as many threads as CPUs waits for "
              "any thread that another process displaced (libgomp spins, then sleeps): with "
              "other work running, multi-thread figures measure the machine, not the agent. "
              "The ratio of the fastest calls (min(A)/min(B)) is less sensitive to that.", ""]
    if others > 0.1:
        lines += ["**This run shared the machine**: other processes used %.0f %% of its %d "
                  "CPUs. Its figures, the %d-thread ones above all, measure that as much as the "
                  "agent; rerun on a quiet machine." % (100 * others, ncpu, ncpu), ""]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if a.points:
        with open(a.points, "w") as f:
            f.write("# series\tdirection\tbatch\tpytorch_ms\tagent_ms\n")
            f.write("\n".join(points) + "\n")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd")
    r = sub.add_parser("run")
    for q in (r,):
        q.add_argument("--models", default=MODELS)
        q.add_argument("--input-size", type=int, default=112)
        q.add_argument("--batch", type=int, default=8)
        q.add_argument("--threads", default="1,2")
        q.add_argument("--rounds", type=int, default=3)
        q.add_argument("--budget-ms", type=int, default=120)
        q.add_argument("--max-reps", type=int, default=25)
        q.add_argument("--allocator", default=cpu_env.DEFAULT_ALLOCATOR)
        q.add_argument("--operands", default="warm", choices=("warm", "cold"),
                       help="the agent's cache state (agent bench --operands): warm (default) "
                            "or cold (rotated through copies larger than the last-level cache)")
        q.add_argument("--work", default=os.path.join(REPO, "build", "bench-faithfulness"))
        q.add_argument("--resume", action="store_true",
                       help="go on with the rounds stored in --work (the same settings, "
                            "machine kind, PyTorch and agent sources; --rounds may grow) instead of "
                            "measuring them afresh")
        q.add_argument("--out", default=os.path.join(REPO, "docs", "reports", "faithfulness.md"))
        q.add_argument("--points", default="")
        q.add_argument("--plot-link", default="",
                       help="a chart of the points to link from the report (bench.sh draws it)")
        q.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    c = sub.add_parser("convs")
    c.add_argument("--models", required=True)
    c.add_argument("--input-size", type=int, required=True)
    c.add_argument("--json", required=True)
    t = sub.add_parser("torch")
    t.add_argument("--json", required=True)
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--allocator", required=True)
    t.add_argument("--budget-ms", type=int, required=True)
    t.add_argument("--max-reps", type=int, required=True)
    t.add_argument("--out", required=True)
    i = sub.add_parser("instep")
    i.add_argument("--model", required=True)
    i.add_argument("--batch", type=int, required=True)
    i.add_argument("--input-size", type=int, required=True)
    i.add_argument("--threads", type=int, required=True)
    i.add_argument("--allocator", required=True)
    i.add_argument("--warmup", type=int, default=3)
    i.add_argument("--iters", type=int, default=10)
    i.add_argument("--again", action="store_true",
                   help="also time each conv call repeated twice at once (operands warm in "
                        "cache; the third into the output memory the second freed): "
                        "conv_again_ms, conv_third_ms; the step then does each conv three times")
    cmds = {"run": cmd_run, "convs": cmd_convs, "torch": cmd_torch, "instep": cmd_instep}
    a = p.parse_args(argv if argv and argv[0] in cmds else ["run"] + argv)
    return cmds[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
