#!/usr/bin/env python3
"""trace_noise.py DSN [--stat geomean|median] [--goal PCT] [--json FILE]

Where the noise of a study's truths comes from, and how many rounds its noise
floor needs. Reads every trace stored in the aggregator database at DSN
(`psql` on PATH): per device, each point's (model, batch, input size) traces
in the order they started, ok and not disturbed, and their timed iterations.
Prints, per device with points traced more than once:

- the traces' own dispersion: the standard deviation of log(trace median /
  point median) over all traces (and 1.4826 x its median absolute value);
- what the iterations inside a trace would give alone: the median over traces
  of their timed iterations' standard deviation (log), scaled to a median of
  that many iterations (x 1.25 / sqrt(iterations));
- how much of a trace's deviation it shares with the traces taken just before
  and after it (other points): the correlation of their deviations at lags of
  1, 3, 10 and 30 traces, with the mean time between them;
- the level of each sitting (traces more than 30 minutes apart start a new
  one): its traces' mean deviation;
- the noise floor as `aggregator validate` defines it (each point's traces
  split into odd- and even-numbered halves whose statistic, --stat, is a and
  b: the mean of |a - b| / (2 x the statistic of all)), computed from the
  first k traces of every point for each k, so that its fall with k is seen
  in one data set; --stat is the fit's: geomean (the default) or median;
- the rounds the floor needs to reach --goal (default 2 %), taking the floor
  to fall as 1 / sqrt(rounds) from its value at the most traces every point has.

The floor here is recomputed from the stored traces and can differ slightly
from validate's, which uses the points the fit kept.
"""
import argparse
import collections
import json
import math
import statistics
import subprocess
import sys

SITTING_GAP_S = 1800
LAGS = (1, 3, 10, 30)


def psql(dsn, sql):
    out = subprocess.run(["psql", dsn, "-X", "-At", "-F", "\t", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def corr(a, b):
    """Pearson's correlation; NaN where either side is constant."""
    try:
        return statistics.correlation(a, b)
    except statistics.StatisticsError:
        return float("nan")


STATS = {"geomean": statistics.geometric_mean, "median": statistics.median}


def floor_pct(series, stat):
    """validate's noise floor over points with two or more traces, percent,
    with the truth taken by `stat` (a function of a list of times)."""
    f = []
    for x in series:
        if len(x) < 2:
            continue
        a, b = stat(x[0::2]), stat(x[1::2])
        f.append(abs(a - b) / (2 * stat(x)))
    return 100 * statistics.fmean(f) if f else float("nan")


def analyse(traces, iters, goal, stat="geomean"):
    """traces: [(trace_id, point, started_epoch, median_ms)] of one device."""
    points = collections.defaultdict(list)
    for tid, point, t, ms in traces:
        points[point].append((t, ms, tid))
    for v in points.values():
        v.sort()
    points = {p: v for p, v in points.items() if len(v) >= 2}
    if not points:
        return None
    dev = {}  # trace id -> log(trace / point median)
    at = {}
    for p, v in points.items():
        med = statistics.median([ms for _, ms, _ in v])
        for t, ms, tid in v:
            dev[tid] = math.log(ms / med)
            at[tid] = (t, p)
    d = list(dev.values())
    res = {"points": len(points), "traces": len(d),
           "traces_per_point": statistics.median([len(v) for v in points.values()]),
           "sd_pct": 100 * statistics.pstdev(d),
           "mad_sd_pct": 100 * 1.4826 * statistics.median([abs(x) for x in d])}
    within = []
    n_iter = []
    for tid in dev:
        its = iters.get(tid, [])
        if len(its) >= 3:
            within.append(statistics.pstdev([math.log(x) for x in its]))
            n_iter.append(len(its))
    if within:
        res["iteration_sd_pct"] = 100 * statistics.median(within)
        res["iterations"] = int(statistics.median(n_iter))
        res["iteration_only_pct"] = res["iteration_sd_pct"] * 1.25 / math.sqrt(res["iterations"])
    order = sorted(dev, key=lambda tid: at[tid][0])
    res["lags"] = []
    for lag in LAGS:
        pairs = [(order[j], order[j + lag]) for j in range(len(order) - lag)
                 if at[order[j]][1] != at[order[j + lag]][1]
                 and at[order[j + lag]][0] - at[order[j]][0] < SITTING_GAP_S]
        if len(pairs) >= 10:
            gaps = [at[b][0] - at[a][0] for a, b in pairs]
            res["lags"].append({"lag": lag, "pairs": len(pairs), "seconds": statistics.fmean(gaps),
                                "corr": corr([dev[a] for a, _ in pairs],
                                             [dev[b] for _, b in pairs])})
    sittings = []  # (start, deviations): a gap of SITTING_GAP_S starts the next one
    for prev, tid in zip([None] + order, order):
        if prev is None or at[tid][0] - at[prev][0] > SITTING_GAP_S:
            sittings.append((at[tid][0], []))
        sittings[-1][1].append(dev[tid])
    res["sittings"] = [{"start": start, "traces": len(x), "mean_pct": 100 * statistics.fmean(x)}
                       for start, x in sittings]
    most = min(len(v) for v in points.values())
    fn = STATS[stat]
    res["stat"] = stat
    res["floor_by_traces"] = [{"k": k, "floor_pct": floor_pct([[ms for _, ms, _ in v[:k]]
                                                               for v in points.values()], fn)}
                              for k in range(2, most + 1)]
    res["floor_pct"] = floor_pct([[ms for _, ms, _ in v] for v in points.values()], fn)
    f_most = res["floor_by_traces"][-1]["floor_pct"]
    res["goal_pct"] = goal
    res["rounds_for_goal"] = math.ceil(most * (f_most / goal) ** 2) if f_most > goal else most
    return res


def text(name, r):
    w = []
    w.append("## %s" % name)
    w.append("%d points, %d traces (median %g per point)" %
             (r["points"], r["traces"], r["traces_per_point"]))
    w.append("trace dispersion: sd %.1f %% (1.4826 MAD %.1f %%) of log(trace / point median)" %
             (r["sd_pct"], r["mad_sd_pct"]))
    if "iteration_sd_pct" in r:
        w.append("iterations inside a trace: sd %.1f %%; a median of %d such would vary %.1f %%" %
                 (r["iteration_sd_pct"], r["iterations"], r["iteration_only_pct"]))
    for lg in r["lags"]:
        w.append("shared with the trace %d later (another point, %.0f s on): corr %.2f (%d pairs)" %
                 (lg["lag"], lg["seconds"], lg["corr"], lg["pairs"]))
    w.append("sittings: " + ", ".join("%d traces %+.1f %%" % (s["traces"], s["mean_pct"])
                                      for s in r["sittings"]))
    w.append("floor (%s of the traces) by traces per point: " % r["stat"] +
             ", ".join("%d: %.2f" % (f["k"], f["floor_pct"]) for f in r["floor_by_traces"]))
    w.append("floor (all traces): %.2f %%; rounds for %.1f %% at 1/sqrt(rounds): %d" %
             (r["floor_pct"], r["goal_pct"], r["rounds_for_goal"]))
    return "\n".join(w)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dsn")
    ap.add_argument("--stat", choices=sorted(STATS), default="geomean",
                    help="the truth's statistic of a point's traces, as the fit's --stat [geomean]")
    ap.add_argument("--goal", type=float, default=2.0, help="floor goal, percent [2]")
    ap.add_argument("--json", help="write the figures as JSON to this file too")
    a = ap.parse_args(argv)
    if a.goal <= 0:
        ap.error("--goal must be above 0 (a percent such as 2)")
    try:
        rows = psql(a.dsn, "SELECT t.trace_id, d.name, t.model_id, t.batch, t.input_size, "
                           "extract(epoch FROM t.started_at), t.median_ms FROM traces t "
                           "JOIN devices d USING (device_id) WHERE t.status = 'ok' "
                           "AND NOT t.disturbed AND t.median_ms > 0 "
                           "AND t.started_at IS NOT NULL")
        it_rows = psql(a.dsn, "SELECT i.trace_id, i.ms FROM trace_iterations i "
                              "JOIN traces t USING (trace_id) WHERE NOT i.warmup "
                              "AND t.status = 'ok' AND NOT t.disturbed AND i.ms > 0")
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("trace_noise: cannot read the traces from %s: %s\n" %
                         (a.dsn, getattr(e, "stderr", "") or e))
        return 1
    iters = collections.defaultdict(list)
    for tid, ms in it_rows:
        iters[int(tid)].append(float(ms))
    by_dev = collections.defaultdict(list)
    for tid, dev, model, batch, px, t, ms in rows:
        by_dev[dev].append((int(tid), (model, int(batch), int(px)), float(t), float(ms)))
    out = {}
    for dev in sorted(by_dev):
        r = analyse(by_dev[dev], iters, a.goal, a.stat)
        if r is not None:
            out[dev] = r
            print(text(dev, r))
            print()
    if not out:
        print("no point was traced more than once: nothing to say about the truths' noise")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
