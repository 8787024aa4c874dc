#!/usr/bin/env python3
"""bench/canary.py: does the canary keep slow phases of the host out of the
benchmarks, and what does it cost?

The agent reads its device's canary (agent/bench/canary.h: on the CPU, ten
96x96x96 sgemm_ on the framework's BLAS) before and after every measured
block, and measures a block again when the canary read over 1.3 times the
run's fastest. This bench runs the same `agent bench` plan (default: the
matmuls of vit_b_16, swin_t and convnext_tiny at 112 px, mini-batch 8, one
thread, warm operands, as bench/matmul_faithfulness.py measures them) in
rounds that alternate the canary off (TRAINCAST_CANARY_SLOW=0) and on
(the default), off on off on ..., and compares the two arms per item against
the fastest time any round of either arm measured for it (the fast phase's
time: neither arm can beat it by more than the noise of a median):

  slow rounds   the share of an arm's item rounds over 1.3 times that
                fastest, per round, then mean +- standard error over the
                arm's rounds (a phase slows many items of one round at once,
                so the round is the unit);
  typical       the median over items of an item's median round over the
                fastest (what a study that takes the median of rounds
                stores, less the truth);
  wall time     of a round, on / off.

With --traces the rounds are `agent trace` runs of the models at the batch
instead (each trace --repeat fresh runner processes of --warmup and --iters
iterations; the runner reads its canary around every iteration and the agent
leaves the slow ones out of the medians, docs/trace-protocol.md), an item is
a model's trace, and its time the trace's median; a trace round counts as
slow over --over times the fastest (default 1.1 for traces: a trace's median
over 30 iterations moves less than a benchmark in a phase; 1.3 for
benchmarks), and the report adds the median over items of the arm's spread,
(max - min) / median of its rounds.

A re-measured item's last JSON line counts (as matmul_faithfulness.py takes
it). It names the machine kind and the time, and writes a Markdown report
(--out); the rounds' JSON lines stay in --work as off-R.json and on-R.json
(gzipped or not), with run.json (the settings, the machine kind, the times
and each round's wall time): --report-only writes the report again from
them.

usage: canary.py [--models LIST] [--ops matmul|conv|conv,matmul]
         [--traces [--repeat 3] [--warmup 3] [--iters 10]] [--over X]
         [--input-size 112] [--batch 8] [--threads 1] [--rounds 4]
         [--budget-ms 150] [--max-reps 25] [--operands warm|cold]
         [--work DIR] [--out FILE.md] [--build-dir build] [--report-only]
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))

from faithfulness import machine_kind  # noqa: E402

ARMS = ("off", "on")


def item_key(r):
    """An item of the plan: its op, key and direction (every field but the
    measurement's)."""
    skip = {"median_ms", "min_ms", "repetitions", "remeasured", "disturbed", "canary_ms",
            "host_slow", "load_others_pct", "route", "algo", "workspace_bytes",
            "sm_clock_mhz", "power_w"}
    return tuple(sorted((k, json.dumps(v)) for k, v in r.items() if k not in skip))


def agent_round(a, arm, path):
    """One `agent bench` process over the plan with the canary `arm`; its
    items (the last line of each), the canary's counts and the wall time."""
    agent = os.path.join(a.build_dir, "agent", "agent")
    results = path + ".results"
    for f in (path, results):
        if os.path.exists(f):
            os.remove(f)
    cmd = [agent, "bench", "--models", ",".join("torchvision:" + m for m in a.models.split(",")),
           "--input-size", str(a.input_size), "--batches", str(a.batch), "--ops", a.ops,
           "--threads", str(a.threads), "--budget-ms", str(a.budget_ms), "--max-reps",
           str(a.max_reps), "--operands", a.operands, "--json", path, "--out", results]
    return run_arm(cmd, arm, results)[0]


def run_arm(cmd, arm, results, **env):
    """Run an agent command with the canary `arm` (off: TRAINCAST_CANARY_SLOW=0;
    on: the default) and `env` added; exits naming it when it fails. Removes
    its result file `results`; returns the wall time and its output."""
    env = dict(os.environ, **env)
    if arm == "off":
        env["TRAINCAST_CANARY_SLOW"] = "0"
    else:
        env.pop("TRAINCAST_CANARY_SLOW", None)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("canary.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    os.remove(results)
    return wall, p.stdout + p.stderr


def trace_round(a, arm, path):
    """One `agent trace` process over the models with the canary `arm`; its
    table goes to `path`. Returns the wall time."""
    agent = os.path.join(a.build_dir, "agent", "agent")
    results = path + ".results"
    if os.path.exists(results):
        os.remove(results)
    cmd = [agent, "trace", "--models", a.models, "--batches", str(a.batch), "--input-size",
           str(a.input_size), "--threads", str(a.threads), "--repeat", str(a.repeat),
           "--warmup", str(a.warmup), "--iters", str(a.iters), "--no-profile", "--no-graph",
           "--out", results]
    wall, output = run_arm(cmd, arm, results, TRAINCAST_PROGRESS="plain")
    with open(path, "w") as f:
        f.write(output)
    return wall


def read_trace_round(path, wall):
    """A trace round's items (model at batch: the trace's median), from the
    table `agent trace` printed, and how many iterations the agent left out
    as slow (its log lines)."""
    items, slow, lines = {}, 0, 0
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[2] == "ok" and w[1].isdigit():
                items[(w[0], w[1])] = float(w[3])
                lines += 1
            elif "left out of the repeat medians" in line:
                slow += int(line.split(": ")[-1].split()[0])
    return {"items": items, "lines": lines, "host_slow": slow, "remeasured": 0, "wall_s": wall}


def read_round(path, wall):
    """A round's items (the last line of each), the canary's counts and its
    wall time, from its JSON lines (path, or path.gz)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        f = gzip.open(path + ".gz", "rt")
    else:
        f = open(path)
    items, lines, slow, remeasured = {}, 0, 0, 0
    with f:
        for line in f:
            r = json.loads(line)
            lines += 1
            slow += bool(r.get("host_slow"))
            remeasured += r.get("remeasured", 0) > 0
            items[item_key(r)] = r["median_ms"]
    return {"items": items, "lines": lines, "host_slow": slow, "remeasured": remeasured,
            "wall_s": wall}


def mean_se(v):
    if not v:
        return float("nan"), float("nan")
    m = statistics.fmean(v)
    se = statistics.stdev(v) / len(v) ** 0.5 if len(v) > 1 else float("nan")
    return m, se


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="vit_b_16,swin_t,convnext_tiny")
    p.add_argument("--ops", default="matmul")
    p.add_argument("--input-size", type=int, default=112)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=4, help="rounds of each arm")
    p.add_argument("--budget-ms", type=int, default=150)
    p.add_argument("--max-reps", type=int, default=25)
    p.add_argument("--operands", default="warm", choices=("warm", "cold"))
    p.add_argument("--traces", action="store_true",
                   help="compare training traces of the models instead of benchmarks")
    p.add_argument("--repeat", type=int, default=3, help="runs per trace (--traces)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations (--traces)")
    p.add_argument("--iters", type=int, default=10, help="measured iterations (--traces)")
    p.add_argument("--over", type=float, default=None,
                   help="a round over this many times its item's fastest is slow (default 1.3; "
                        "1.1 with --traces)")
    p.add_argument("--work", default=os.path.join(REPO, "build", "bench-canary"))
    p.add_argument("--out", default=os.path.join(REPO, "build", "bench-canary", "report.md"))
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--report-only", action="store_true",
                   help="write the report from the rounds stored in --work")
    a = p.parse_args(argv)
    run_path = os.path.join(a.work, "run.json")
    if a.report_only:
        if not os.path.exists(run_path):
            p.error("--report-only: %s holds no run (no run.json)" % a.work)
        with open(run_path) as f:
            run = json.load(f)
        for k, v in run["settings"].items():
            setattr(a, k, v)
    else:
        if a.rounds < 2:
            p.error("--rounds must be 2 or more (a standard error over rounds needs two)")
        os.makedirs(a.work, exist_ok=True)
        if a.over is None:
            a.over = 1.1 if a.traces else 1.3
        run = {"settings": {k: getattr(a, k) for k in ("models", "ops", "input_size", "batch",
                                                       "threads", "rounds", "budget_ms",
                                                       "max_reps", "operands", "traces",
                                                       "repeat", "warmup", "iters", "over")},
               "machine": machine_kind(),
               "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "wall_s": {arm: [] for arm in ARMS}}
        for r in range(a.rounds):
            for arm in ARMS:
                print("round %d of %d, canary %s ..." % (r + 1, a.rounds, arm), flush=True)
                run["wall_s"][arm].append(
                    trace_round(a, arm, os.path.join(a.work, "%s-%d.txt" % (arm, r)))
                    if a.traces else
                    agent_round(a, arm, os.path.join(a.work, "%s-%d.json" % (arm, r))))
        run["ended"] = time.strftime("%H:%M UTC", time.gmtime())
        with open(run_path, "w") as f:
            json.dump(run, f, indent=1)
    kind, started, ended = run["machine"], run["started"], run["ended"]
    # Runs stored before --traces and --over read as benchmark runs at 1.3.
    traces, over = run["settings"].get("traces", False), run["settings"].get("over") or 1.3
    rounds = {arm: [read_trace_round(os.path.join(a.work, "%s-%d.txt" % (arm, r)),
                                     run["wall_s"][arm][r]) if traces else
                    read_round(os.path.join(a.work, "%s-%d.json" % (arm, r)),
                               run["wall_s"][arm][r])
                    for r in range(a.rounds)] for arm in ARMS}

    keys = set.intersection(*(set(x["items"]) for arm in ARMS for x in rounds[arm]))
    if not keys:
        sys.exit("canary.py: no item was measured in every round")
    fastest = {k: min(x["items"][k] for arm in ARMS for x in rounds[arm]) for k in keys}
    rows = {}
    for arm in ARMS:
        shares = [sum(x["items"][k] > over * fastest[k] for k in keys) / len(keys)
                  for x in rounds[arm]]
        typical = statistics.median(
            statistics.median(x["items"][k] / fastest[k] for x in rounds[arm]) for k in keys)
        spread = statistics.median(
            (max(x["items"][k] for x in rounds[arm]) - min(x["items"][k] for x in rounds[arm]))
            / statistics.median(x["items"][k] for x in rounds[arm]) for k in keys)
        rows[arm] = {"share": mean_se(shares), "shares": shares, "typical": typical,
                     "spread": spread,
                     "wall": statistics.median(x["wall_s"] for x in rounds[arm]),
                     "host_slow": sum(x["host_slow"] for x in rounds[arm]),
                     "remeasured": sum(x["remeasured"] for x in rounds[arm]),
                     "lines": sum(x["lines"] for x in rounds[arm])}
    cost = rows["on"]["wall"] / rows["off"]["wall"]

    out = []
    out.append("# The canary: slow phases of the host, off and on")
    out.append("")
    if traces:
        what = ("`agent trace` over %s at %d px, mini-batch %d, %d thread%s, %d runs of %d warm-up "
                "and %d measured iterations per trace"
                % (a.models, a.input_size, a.batch, a.threads, "" if a.threads == 1 else "s",
                   a.repeat, a.warmup, a.iters))
    else:
        what = ("`agent bench --ops %s` over %s at %d px, mini-batch %d, %d thread%s, %s operands, "
                "budget %d ms, at most %d repetitions"
                % (a.ops, a.models, a.input_size, a.batch, a.threads,
                   "" if a.threads == 1 else "s", a.operands, a.budget_ms, a.max_reps))
    out.append("Machine kind `%s`, %s to %s; %s; %d rounds of each arm, alternating off on off on; "
               "%d items in every round." % (kind, started, ended, what, a.rounds, len(keys)))
    out.append("")
    marked = "iterations left out as slow" if traces else "blocks marked slow"
    again = "" if traces else " items measured again |"
    out.append("| canary | item rounds over %.2g x the fastest (mean +- SE over rounds) | per "
               "round | median item, median round / fastest | median item, (max - min) / median "
               "of its rounds | %s |%s wall time of a round |" % (over, marked, again))
    out.append("|---|---|---|---|---|---|%s---|" % ("" if traces else "---|"))
    for arm in ARMS:
        w = rows[arm]
        out.append("| %s | %.1f %% +- %.1f | %s | %.3f | %.3f | %d |%s %.0f s |"
                   % (arm, 100 * w["share"][0], 100 * w["share"][1],
                      ", ".join("%.0f %%" % (100 * s) for s in w["shares"]), w["typical"],
                      w["spread"], w["host_slow"],
                      "" if traces else " %d |" % w["remeasured"], w["wall"]))
    out.append("")
    if traces:
        out.append("Wall time on / off: %.2f (medians of the rounds). \"Iterations left out as "
                   "slow\" sums what the agent logged over the arm's rounds. The fastest of an "
                   "item is the fastest trace median any round of either arm measured." % cost)
    else:
        out.append("Wall time on / off: %.2f (medians of the rounds). \"Blocks marked slow\" "
                   "counts results still marked after their re-measurements; \"items measured "
                   "again\" those whose block was measured again for load or the canary. The "
                   "fastest of an item is the fastest median any round of either arm measured."
                   % cost)
    text = "\n".join(out) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
