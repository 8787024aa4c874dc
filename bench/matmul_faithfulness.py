#!/usr/bin/env python3
"""bench/matmul_faithfulness.py: does the agent time the matmuls PyTorch runs?

For every distinct matmul config of some models (default: vit_b_16, swin_t,
convnext_tiny) at one input size and mini-batch (112 px, 8), on each thread
count (default 1), it compares

  A  the agent's benchmark of each training direction of the config
     (PyTorch 1.13's CPU path, one sgemm_ of the framework's BLAS per
     product, or baddbmm's loops for tiny products), measured as the
     pipeline measures a model set: one `agent bench --ops matmul` process
     over the models' deduplicated plan, its JSON lines kept in --work as
     agent-THREADS-ROUND.json, and
  B  PyTorch's own time for the same product: the forward as the model
     calls it (torch.addmm with the bias, torch.mm, torch.bmm, on operands
     laid out as the model holds them: a Linear's weight as weight.t(), an
     attention's keys as k.transpose(1, 2)), and each gradient as autograd
     computes it: the forward's node (AddmmBackward0, MmBackward0,
     BmmBackward0) called directly for the one operand, its products on the
     layouts the forward saved, without the engine around it (as
     faithfulness.py times aten::convolution_backward for convs),

measured A B A B ... (--rounds rounds, each side one fresh process), so that
drift of a shared machine cancels in the ratio A/B of each round; the
figure per config and direction is the median ratio over the rounds. It
prints, per thread count, the median ratio and the share of ratios within
0.85-1.15 against the goal (median 0.95-1.05, at least 90 % within, on one
thread), the same on the machine's fast phase (each side's fastest round of
a config direction, min(A)/min(B), as faithfulness.py's fastest calls: a
slow phase of a shared host that fell on one side's round counts with a
round it did not), and writes a Markdown report (--out) with every row.
Both sides read the host-phase canary around each timing and take a timing
again in a slow phase (the agent's own, agent/bench/canary.h; PyTorch's
side faithfulness.Canary, the same ten products through torch.mm);
TRAINCAST_CANARY_SLOW sets the ratio for both (default 1.3, 0 off).

The PyTorch side runs under $TRAINCAST_PYTHON (default /usr/bin/python3),
as the agent's harness does. The configs come from `agent model describe torchvision:NAME --input-size S
--format json` (its "matmuls"); a model the importer cannot read is
reported and left out.

usage: matmul_faithfulness.py [--models LIST] [--input-size 112] [--batch 8]
         [--threads 1] [--rounds 6] [--budget-ms 150] [--max-reps 25]
         [--allocator tcmalloc] [--operands warm|cold] [--quiet-threshold PCT]
         [--work DIR] [--out FILE.md] [--build-dir build]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "agent", "harness"))

import cpu_env  # noqa: E402
import matmul_config  # noqa: E402
from faithfulness import Canary, canary_line, machine_kind, median_time  # noqa: E402

MODELS = "vit_b_16,swin_t,convnext_tiny"
# The interpreter with PyTorch, as the agent looks for it.
PYTHON = os.environ.get("TRAINCAST_PYTHON", "/usr/bin/python3")
MB_ROWS, MB_BATCH = matmul_config.MB_ROWS, matmul_config.MB_BATCH
DIRS = ("fwd", "bwd_data", "bwd_filter")
GOAL_MEDIAN = (0.95, 1.05)
GOAL_WITHIN = 0.90
BAND = (0.85, 1.15)
# The suffix of a gradient's PyTorch time taken through the autograd engine.
ENGINE = "+engine"


def run(cmd, ok_fail=False, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        if ok_fail:
            return None, r.stderr.strip().splitlines()[-1:] or [""]
        sys.stderr.write("matmul_faithfulness: %s failed (%d):\n%s%s\n" % (
            " ".join(cmd[:3]), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        sys.exit(1)
    return r.stdout, None


KEY_FIELDS = ("batch", "m", "n", "k", "minibatch_in", "trans_a", "trans_b", "weight", "bias")


def key_of(c):
    """A config's key: its fields in KEY_FIELDS order (a config of `agent
    model describe`, or a JSON line of `agent bench`)."""
    return tuple(c[f] for f in KEY_FIELDS)


def label(c):
    rows = ("Nx%d" % c["m"]) if c["minibatch_in"] == MB_ROWS else str(c["m"])
    count = ("%dN " % c["batch"]) if c["minibatch_in"] == MB_BATCH else (
        "%d " % c["batch"] if c["batch"] > 1 else "")
    return "%s%sx%d k%d%s%s%s%s" % (count, rows, c["n"], c["k"], " tA" if c["trans_a"] else "",
                                   " tB" if c["trans_b"] else "", " weight" if c["weight"] else "",
                                   " +bias" if c["bias"] else "")


def cmd_configs(a):
    """The distinct matmul configs of the models, with their directions."""
    agent = os.path.join(a.build_dir, "agent", "agent")
    out, skipped = {}, {}
    for name in a.models.split(","):
        text, err = run([agent, "model", "describe", "torchvision:" + name, "--input-size",
                         str(a.input_size), "--format", "json"], ok_fail=True)
        if text is None:
            skipped[name] = err[0]
            continue
        out[name] = json.loads(text)["matmuls"]
    with open(a.json, "w") as f:
        json.dump({"models": out, "skipped": skipped}, f)
    return 0


def distinct(models):
    """key -> (config, set of directions), over every model."""
    seen = {}
    for uses in models.values():
        for u in uses:
            k = key_of(u["config"])
            c, dirs = seen.get(k, (u["config"], set()))
            seen[k] = (c, dirs | set(matmul_config.step_directions(u)))
    return seen


def agent_round(a, threads, path):
    """The agent's times of one round, measured as the pipeline measures a
    model set: one `agent bench --ops matmul` process over every model, its
    deduplicated matmul plan at the mini-batch, each item timed in turn, as
    the results an aggregator is sent are measured (not a fresh `agent
    bench-matmul` process per config, as before 2026-12-06). Its JSON lines
    are the round's record in --work."""
    agent = os.path.join(a.build_dir, "agent", "agent")
    results = path + ".results"
    for f in (path, results):
        if os.path.exists(f):
            os.remove(f)
    cmd = [agent, "bench", "--models", ",".join("torchvision:" + m for m in a.model_names),
           "--input-size", str(a.input_size), "--batches", str(a.batch), "--ops", "matmul",
           "--threads", str(threads), "--allocator", a.allocator, "--budget-ms",
           str(a.budget_ms), "--max-reps", str(a.max_reps), "--operands", a.operands,
           "--json", path, "--out", results]
    if a.quiet_threshold is not None:
        cmd += ["--quiet-threshold", str(a.quiet_threshold)]
    run(cmd)
    os.remove(results)
    times = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("op") != "matmul" or r.get("minibatch") != a.batch:
                continue
            times[key_of(r) + (r["direction"],)] = (r["median_ms"], r["route"])
    return times


def torch_round(a, threads, path):
    run([PYTHON, os.path.abspath(__file__), "torch", "--json", a.json, "--threads",
         str(threads), "--batch", str(a.batch), "--allocator", a.allocator, "--budget-ms",
         str(a.budget_ms), "--max-reps", str(a.max_reps), "--out", path])
    with open(path) as f:
        times = {tuple(k): v for k, v in json.load(f)}
    a.torch_canary = Canary.count(path + ".canary", a.torch_canary)
    return times


def time_matmul(torch, c, dirs, a):
    """PyTorch's own time of each direction of one config at the mini-batch."""
    count, m, n, k = matmul_config.gemm(c, a.batch)
    mm = matmul_config.is_mm(c)
    lead = () if mm else (count,)
    a_store = torch.randn(*lead, *((k, m) if c["trans_a"] else (m, k)))
    b_store = torch.randn(*lead, *((n, k) if c["trans_b"] else (k, n)))
    bias = torch.randn(n) if c["bias"] else None

    def t(x):
        return x.transpose(-2, -1) if x.dim() >= 2 else x

    def forward(ga, gb):
        x = a_store.detach().requires_grad_(ga)
        w = b_store.detach().requires_grad_(gb)
        xa = t(x) if c["trans_a"] else x
        wb = t(w) if c["trans_b"] else w
        if mm:
            y = torch.addmm(bias, xa, wb) if bias is not None else torch.mm(xa, wb)
        else:
            y = torch.bmm(xa, wb)
        return y, x, w

    budget = a.budget_ms / 1000.0
    out = {}
    with torch.no_grad():
        y0 = forward(False, False)[0]
    gy = torch.randn_like(y0)
    for d in DIRS:
        if d not in dirs:
            continue
        if d == "fwd":
            def call():
                with torch.no_grad():
                    forward(False, False)
        else:
            # The forward's autograd node called directly, as the engine calls
            # it: its formula (mm_mat1_backward, mm_mat2_backward, bmm's
            # transposes) computes the one operand's gradient, on the layouts
            # the forward saved; not the engine around it, as faithfulness.py
            # times aten::convolution_backward and not torch.autograd.grad.
            ga = d == "bwd_data"
            node = forward(ga, not ga)[0].grad_fn

            def call(node=node):
                node(gy)
            # Beside it, as the report gave it before (ENGINE): through
            # torch.autograd.grad, a fresh forward before each call.
            def setup_engine(ga=ga):
                y, x, w = forward(ga, not ga)
                return y, (x if ga else w)

            def call_engine(s):
                torch.autograd.grad(s[0], [s[1]], gy)
            out[d + ENGINE] = median_time(call_engine, budget, a.max_reps, setup_engine,
                                          a.canary)[0]
        out[d] = median_time(call, budget, a.max_reps, canary=a.canary)[0]
    return out


def cmd_torch(a):
    def fail(msg):
        sys.stderr.write(msg + "\n")
        sys.exit(1)

    cpu_env.ensure_allocator(a.allocator, True, fail)
    import torch
    torch.set_num_threads(a.threads)
    a.canary = Canary(torch, a.threads)
    with open(a.json) as f:
        configs = distinct(json.load(f)["models"])
    rows = []
    for k, (c, dirs) in configs.items():
        for d, ms in time_matmul(torch, c, dirs, a).items():
            rows.append([list(k) + [d], ms])
    with open(a.out, "w") as f:
        json.dump(rows, f)
    a.canary.dump(a.out + ".canary")
    return 0


def summarize(ratios):
    v = sorted(ratios)
    if not v:
        return float("nan"), float("nan")
    within = sum(BAND[0] <= r <= BAND[1] for r in v) / len(v)
    return statistics.median(v), within


def goal(threads, med, within, unmeasured):
    """The goal's verdict on a summary line (one thread only): the median and
    the share within; a config direction the agent's plan left out is no
    ratio, so the goal is not met over every one of them."""
    if threads != 1:
        return ""
    ok = GOAL_MEDIAN[0] <= med <= GOAL_MEDIAN[1] and within >= GOAL_WITHIN and not unmeasured
    return " (goal met)" if ok else " (goal not met)"


def cmd_run(a):
    os.makedirs(a.work, exist_ok=True)
    a.json = os.path.join(a.work, "matmuls.json")
    cmd_configs(a)
    with open(a.json) as f:
        data = json.load(f)
    expected = {k + (d,) for k, (c, dirs) in distinct(data["models"]).items() for d in dirs}
    a.model_names = list(data["models"])
    lines = ["# Matmul faithfulness: the agent's CPU matmul benchmarks against PyTorch's own "
             "calls", "",
             "Models %s at %d px, mini-batch %d, allocator `%s`, the agent's operands %s, %d "
             "rounds A B A B (agent, PyTorch); ratio = agent / PyTorch, the median over the "
             "rounds. Goal on one thread: median %.2f-%.2f, at least %d %% within %.2f-%.2f." % (
                 ", ".join(data["models"]), a.input_size, a.batch, a.allocator, a.operands,
                 a.rounds,
                 GOAL_MEDIAN[0], GOAL_MEDIAN[1], GOAL_WITHIN * 100, BAND[0], BAND[1]), "",
             "PyTorch's time for a gradient is its forward's autograd node called directly (the "
             "products of its formula on the layouts the forward saved, as faithfulness.py times "
             "aten::convolution_backward); the last column divides by the same gradient through "
             "torch.autograd.grad with a fresh forward before each call (the engine and the "
             "cache the forward leaves), the reference before 2026-12-04.", ""]
    # Where and when: a ratio holds on its machine's kind.
    kind = machine_kind()
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    when = len(lines)
    lines += [""]
    for name, why in data["skipped"].items():
        lines.append("- %s left out: %s" % (name, why))
    for threads in [int(t) for t in a.threads.split(",")]:
        a.torch_canary = None  # [taken again, still slow] where it ran
        unmeasured = set()
        per = {}
        per_engine = {}
        routes = {}
        for r in range(a.rounds):
            sys.stderr.write("matmul_faithfulness: %d thread(s), round %d of %d\n"
                             % (threads, r + 1, a.rounds))
            at = agent_round(a, threads,
                             os.path.join(a.work, "agent-%d-%d.json" % (threads, r)))
            tt = torch_round(a, threads, os.path.join(a.work, "torch-%d-%d.json" % (threads, r)))
            unmeasured |= expected - set(at)
            for key, (ms, route) in at.items():
                if key in tt and tt[key] > 0:
                    per.setdefault(key, []).append((ms / tt[key], ms, tt[key]))
                    routes[key] = route
                    ek = key[:-1] + (key[-1] + ENGINE,)
                    if tt.get(ek, 0) > 0:
                        per_engine.setdefault(key, []).append(ms / tt[ek])
        ratios = {k: statistics.median(x[0] for x in v) for k, v in per.items()}
        med, within = summarize(ratios.values())
        summary = ("%d thread(s): %d config directions, median ratio %.3f, %.0f %% within "
                   "%.2f-%.2f%s" % (threads, len(ratios), med, within * 100, BAND[0], BAND[1],
                                    goal(threads, med, within, unmeasured)))
        # The small attention products miss most: how much of the time is
        # in config directions within the band (each counted once).
        torch_ms = {k: statistics.median(x[2] for x in v) for k, v in per.items()}
        total = sum(torch_ms.values())
        if total > 0:
            summary += "; %.1f %% of PyTorch's time (each config direction once) is in those " \
                       "within" % (100.0 * sum(t for k, t in torch_ms.items()
                                               if BAND[0] <= ratios[k] <= BAND[1]) / total)
        # The gradients against PyTorch's time through the engine, the
        # reference before the node was called directly.
        grads = [k for k in ratios if k[9] != "fwd"]
        eng = {k: statistics.median(v) for k, v in per_engine.items()}
        if grads and eng:
            gm, gw = summarize([ratios[k] for k in grads])
            em, ew = summarize(eng.values())
            summary += ("; the %d gradients %.3f, %.0f %% within (against PyTorch through "
                        "torch.autograd.grad with a forward before each call: %.3f, %.0f %%)"
                        % (len(grads), gm, gw * 100, em, ew * 100))
        if unmeasured:
            summary += ("; %d config direction(s) without the agent's time in some round (its "
                        "plan left them out): %s" % (len(unmeasured), ", ".join(
                            "%s %s" % (label(dict(zip(KEY_FIELDS, k[:9]))), k[9])
                            for k in sorted(unmeasured))))
        # The same on the machine's fast phase, as faithfulness.py's fastest
        # calls: each side's fastest round of a config direction, so that a
        # slow phase of the machine that fell on one side's round counts with
        # a round it did not.
        fast = {k: min(x[1] for x in v) / min(x[2] for x in v) for k, v in per.items()}
        fmed, fwithin = summarize(fast.values())
        fast_line = ("%d thread(s), fastest rounds (min(A)/min(B)): median ratio %.3f, %.0f %% "
                     "within %.2f-%.2f%s" % (threads, fmed, fwithin * 100, BAND[0], BAND[1],
                                             goal(threads, fmed, fwithin, unmeasured)))
        canary = canary_line(a.torch_canary, "JSON lines")
        print(summary)
        print(fast_line)
        lines += ["", "## %d thread(s)" % threads, "", summary, "", fast_line, "", canary, "",
                  "| config | direction | route | agent ms | PyTorch ms | ratio | ratio, "
                  "fastest rounds | ratio, PyTorch through the engine |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
        for key in sorted(ratios):
            c = dict(zip(KEY_FIELDS, key[:9]))
            v = per[key]
            lines.append("| %s | %s | %s | %.4f | %.4f | %.3f | %.3f | %s |" % (
                label(c), key[9], routes[key], statistics.median(x[1] for x in v),
                statistics.median(x[2] for x in v), ratios[key], fast[key],
                "%.3f" % eng[key] if key in eng else ""))
    lines[when] = "Machine kind `%s`; measured %s-%s UTC." % (
        kind, started, time.strftime("%H:%M", time.gmtime()))
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.stderr.write("matmul_faithfulness: report in %s\n" % a.out)
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd")
    r = sub.add_parser("run")
    r.add_argument("--models", default=MODELS)
    r.add_argument("--input-size", type=int, default=112)
    r.add_argument("--batch", type=int, default=8)
    r.add_argument("--threads", default="1")
    r.add_argument("--rounds", type=int, default=6)
    r.add_argument("--budget-ms", type=int, default=150)
    r.add_argument("--max-reps", type=int, default=25)
    r.add_argument("--allocator", default=cpu_env.DEFAULT_ALLOCATOR)
    r.add_argument("--operands", default="warm", choices=("warm", "cold"),
                   help="the agent's cache state (agent bench-matmul --operands): warm (default, "
                        "as PyTorch's calls in a loop of their own meet it) or cold")
    r.add_argument("--quiet-threshold", type=float, default=None,
                   help="the agent's quiet guard (default: its own; 100 turns it off)")
    r.add_argument("--work", default=os.path.join(REPO, "build", "bench-matmul-faithfulness"))
    r.add_argument("--out", default=os.path.join(REPO, "build", "bench-matmul-faithfulness",
                                                 "report.md"))
    r.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    t = sub.add_parser("torch")
    t.add_argument("--json", required=True)
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--allocator", required=True)
    t.add_argument("--budget-ms", type=int, required=True)
    t.add_argument("--max-reps", type=int, required=True)
    t.add_argument("--out", required=True)
    a = p.parse_args(argv if argv and argv[0] in ("run", "torch") else ["run"] + argv)
    return {"run": cmd_run, "torch": cmd_torch}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
