#!/usr/bin/env python3
"""bench/allocators.py: which memory allocator should a CPU device measure with?

Compares the agent's allocator choices (agent/devices/allocator.h: tcmalloc,
jemalloc with purging off, glibc with mmap and trimming off, and the system
allocator as the process starts) for speed and steadiness on

  - a training step: agent/harness/trace_runner.py (resnet18 at 112 px,
    batch 8 by default), one fresh process per allocator and round;
  - conv benchmarks: `agent bench-conv` (a 3x3 conv on oneDNN and a 1x1
    conv on PyTorch's native path), one fresh process per allocator, conv
    and round.

Every round runs each allocator once, in a rotated order (A B C D, B C D A,
...), so that the machine's drift hits them alike; ratios against the system
allocator are taken within a round. Reported per allocator: the median over
rounds, the median ratio to the system allocator, the spread between fresh
processes ((max - min) / median of the per-process medians) and, for the
training step, the spread within a process ((max - min) / median of its
measured iterations).

usage: allocators.py [--rounds 5] [--threads 1,2] [--model resnet18]
         [--input-size 112] [--batch 8] [--iters 8] [--out docs/reports/allocators.md]
         [--build-dir build]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "agent", "harness"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpu_env  # noqa: E402
from machine_share import Share  # noqa: E402

CHOICES = ["system", "glibc-tuned", "jemalloc", "tcmalloc"]


def installed(name):
    lib = cpu_env.ALLOCATORS[name][0]
    return not lib or bool(cpu_env._locate(lib))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, TRAINCAST_LOG="error", TRAINCAST_PROGRESS="plain"))
    if r.returncode != 0:
        sys.stderr.write("allocators: %s failed (%d):\n%s%s\n" % (
            " ".join(cmd[:4]), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        sys.exit(1)
    return r.stdout


def step(a, alloc, threads):
    out = run([sys.executable, os.path.join(REPO, "agent", "harness", "trace_runner.py"),
               "--model", a.model, "--batch", str(a.batch), "--input-size", str(a.input_size),
               "--threads", str(threads), "--warmup", "3", "--iters", str(a.iters),
               "--allocator", alloc])
    ms, described = [], ""
    for line in out.splitlines():
        o = json.loads(line)
        if o["type"] == "header":
            described = o.get("allocator", "")
        if o["type"] == "iter" and not o["warmup"]:
            ms.append(o["ms"])
    med = statistics.median(ms)
    return med, (max(ms) - min(ms)) / med, described


CONVS = [
    ("3x3 64->64, 56x56, batch 8 (oneDNN)", ["--n", "8", "--c", "64", "--h", "56", "--w", "56",
                                             "--k", "64", "--r", "3", "--pad", "1"], None),
    ("1x1 64->256, 56x56, batch 8, 1 thread (native im2col + GEMM)",
     ["--n", "8", "--c", "64", "--h", "56", "--w", "56", "--k", "256", "--r", "1"], 1),
]


def conv(a, alloc, args, threads):
    out = run([os.path.join(a.build_dir, "agent", "agent"), "bench-conv", "--allocator", alloc,
               "--threads", str(threads or a.thread_list[-1]), "--direction", "fwd", "--budget-ms",
               "600", "--max-reps", "60"] + args)
    m = re.search(r"chosen: .*?median ([0-9.]+) ms", out)
    return float(m.group(1))


def spread(v):
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else 0.0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", default="1,%d" % (os.cpu_count() or 1),
                   help="thread counts of the training step (default 1 and all CPUs)")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--input-size", type=int, default=112)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--out", default=os.path.join(REPO, "docs", "reports", "allocators.md"))
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    a = p.parse_args(argv)
    a.thread_list = sorted({int(t) for t in a.threads.split(",")})
    allocs = [c for c in CHOICES if installed(c)]
    missing = [c for c in CHOICES if c not in allocs]
    t0, loads = time.time(), [open("/proc/loadavg").read().split()[:3]]
    share = Share()
    steps = {(c, t): [] for c in allocs for t in a.thread_list}
    within = {(c, t): [] for c in allocs for t in a.thread_list}
    names = {}
    convs = {(c, i): [] for c in allocs for i in range(len(CONVS))}
    for r in range(a.rounds):
        order = allocs[r % len(allocs):] + allocs[:r % len(allocs)]
        sys.stderr.write("allocators: round %d of %d: %s\n" % (r + 1, a.rounds, " ".join(order)))
        for c in order:
            for t in a.thread_list:
                med, spr, names[c] = step(a, c, t)
                steps[(c, t)].append(med)
                within[(c, t)].append(spr)
            for i, (_, args, threads) in enumerate(CONVS):
                convs[(c, i)].append(conv(a, c, args, threads))
        loads.append(open("/proc/loadavg").read().split()[:3])
    base = "system"
    lines = ["# Allocators: speed and steadiness of a CPU device", "",
             "*Written by `bench/allocators.py` (`deploy/bench.sh --only allocators`); %s, %.0f s,"
             " load average (1, 5, 15 min) %s.*" % (
                 time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - t0,
                 " -> ".join(" ".join(x) for x in loads)), "",
             "A CPU device measures with the allocator its agent runs with (`--allocator`, "
             "agent/devices/allocator.h), and the trace runner inherits it. The choices: `tcmalloc` "
             "(gperftools' tcmalloc_minimal, Debian libtcmalloc-minimal4, preloaded); `jemalloc` "
             "(libjemalloc2, preloaded, with the settings of PyTorch's CPU launcher "
             "`oversize_threshold:1,background_thread:true,metadata_thp:auto` and purging off, "
             "`dirty_decay_ms:-1,muzzy_decay_ms:-1`; with its default decay it returns freed "
             "pages within seconds and was several times slower here); `glibc-tuned` (glibc "
             "with `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4000000000`: freed memory stays "
             "in the process); `system` (the process as started: glibc's defaults hand large "
             "blocks back to the kernel on free, and every page of the next tensor is faulted "
             "in again, which on a virtual machine can cost more than the convolution).", "",
             "%d rounds; each round runs every allocator once in a rotated order, each run a "
             "fresh process. Ratios are to the system allocator in the same round (median over "
             "rounds). Spread between processes: (max - min) / median of the per-process "
             "medians; within: (max - min) / median of one process's measured iterations "
             "(median over rounds)." % a.rounds, ""]
    if missing:
        lines += ["Not installed, not measured: %s." % ", ".join(missing), ""]
    def vs_base(v, b):
        return statistics.median(x / y for x, y in zip(v, b)) if b else float("nan")

    for t in a.thread_list:
        lines += ["## Training step: %s at %d px, batch %d, %d thread%s, %d iterations" % (
            a.model, a.input_size, a.batch, t, "" if t == 1 else "s", a.iters), "",
            "| allocator | as the device names it | step ms (median) | vs system | spread "
            "between processes | spread within |", "|---|---|---|---|---|---|"]
        for c in allocs:
            lines.append("| %s | %s | %.1f | %.2f | %.1f %% | %.1f %% |" % (
                c, names[c], statistics.median(steps[(c, t)]),
                vs_base(steps[(c, t)], steps.get((base, t))), 100 * spread(steps[(c, t)]),
                100 * statistics.median(within[(c, t)])))
        lines.append("")
    for i, (label, _, threads) in enumerate(CONVS):
        lines += ["", "## Conv benchmark: %s, forward, %d thread%s" % (
            label, threads or a.thread_list[-1],
            "" if (threads or a.thread_list[-1]) == 1 else "s"), "",
            "| allocator | median ms | vs system | spread between processes |", "|---|---|---|---|"]
        for c in allocs:
            v = convs[(c, i)]
            ratio = vs_base(v, convs.get((base, i)))
            lines.append("| %s | %.3f | %.2f | %.1f %% |" % (c, statistics.median(v), ratio,
                                                            100 * spread(v)))
    # The choice: speed first (the training step: geometric mean over the
    # thread counts of its time relative to the system allocator's), and
    # among the allocators within 3 % of the fastest, the steadiest (the
    # largest spread between processes of the steps and the convs, smallest
    # wins).
    def speed(c):
        r = [vs_base(steps[(c, t)], steps.get((base, t))) for t in a.thread_list]
        return statistics.geometric_mean(r) if base in allocs else \
            statistics.geometric_mean([statistics.median(steps[(c, t)]) for t in a.thread_list])

    fastest = min(speed(c) for c in allocs)
    tied = [c for c in allocs if speed(c) <= 1.03 * fastest]

    def worst_spread(c):
        return max([spread(steps[(c, t)]) for t in a.thread_list] +
                   [spread(convs[(c, i)]) for i in range(len(CONVS))])

    default = cpu_env.DEFAULT_ALLOCATOR
    if tied == [default]:
        verdict = "The default, **%s**, is the fastest." % default
    elif default in tied:
        verdict = ("The default, **%s**, is among them: within this run's resolution they are "
                   "equivalent, and the default stays the allocator PyTorch's own CPU launcher "
                   "preloads (`torch.backends.xeon.run_cpu`), which needs no settings." % default)
    else:
        verdict = ("**The default, %s, is not among them**: the data favour %s "
                   "(`TC_ALLOCATOR_DEFAULT` in agent/devices/allocator.h, `DEFAULT_ALLOCATOR` in "
                   "agent/harness/cpu_env.py)." % (default, min(tied, key=worst_spread)))
    lines += ["", "## Choice", "",
              "Speed first, then steadiness. Within 3 %% of the fastest training step (geometric "
              "mean over the thread counts of the time relative to the system allocator): %s; "
              "the largest spread between processes over the steps and the convs: %s. %s" % (
                  ", ".join(tied), ", ".join("%s %.1f %%" % (c, 100 * worst_spread(c))
                                             for c in tied), verdict)]
    others = share.others()
    lines += ["", "Other processes used %.0f %% of the machine during the run." % (100 * others)]
    if others > 0.1:
        lines += ["", "**This run shared the machine**: preempted runs inflate times and "
                  "spreads of every allocator alike; compare ratios, and rerun on a quiet "
                  "machine for the spreads."]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
