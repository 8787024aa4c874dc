#!/usr/bin/python3
"""Write the accuracy study's Markdown report (bench/accuracy.sh).

Reads the `aggregator validate --format json` of each analysis (main: hold
out one CNN; family; batch; median, p10 and min statistics; class features;
the baseline form), the profiler's time per op class, what the database holds
per device, and the study's bookkeeping (CNNs done and failed, the timeline
of benchmarks and traces). Every figure is computed from the held-out
predictions the JSON carries, per device and input size. With --outside, also the CNNs kept out of the
study: `aggregator predict` of each (its CSV) against its measured traces."""
import argparse
import csv
import json
import math
import os
import re
import statistics

from accuracy_fmt import MODERN_FAMILIES, cnn_name, family, pct, short_device
from accuracy_fmt import kind as model_kind
from accuracy_ops import report_class_fit, report_op_times

# The goals of the study (docs/fitting.md): on one CPU thread (or a GPU) and
# on several threads, the noisier device; the outside goal is for CNNs of
# a family the study lacks (other sizes of its families should do better).
GOALS = {"cnn": 5.0, "family": 7.0, "batch": 5.0, "outside": 8.0}
GOALS_THREADS = {"cnn": 8.0, "family": 10.0, "batch": 8.0, "outside": 12.0}
FLOOR_GOAL = 2.0
COVERAGE = (90.0, 98.0)


def goals_for(device):
    """The goals of a device by its name: "(N threads)" with N > 1 is the
    several-threads CPU device."""
    m = re.search(r"\((\d+) threads?\)", device or "")
    return GOALS_THREADS if m and int(m.group(1)) > 1 else GOALS


def read_tsv(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def size_of(model_id):
    m = re.search(r"@(\d+)$", model_id or "")
    return int(m.group(1)) if m else 0


def finite(v):
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def coverage_se(groups):
    """The standard error of a coverage (percent) across held-out groups.

    groups: {group: [covered, with an interval]}. The points of one group (a
    CNN's batch sizes, or a whole family) share the interval's calibration and
    miss together, so they are not independent draws: the cluster-robust
    standard error of the ratio covered / points, with the small-sample factor
    G / (G - 1)."""
    g = len(groups)
    n = sum(v[1] for v in groups.values())
    if g < 2 or not n:
        return None
    rate = sum(v[0] for v in groups.values()) / n
    return 100.0 * math.sqrt(g / (g - 1) * sum((c - rate * k) ** 2
                                               for c, k in groups.values())) / n


def stats(points):
    """MAPE, median and max APE, interval coverage with its standard error and
    median width (percent) of held-out points."""
    apes, covered, with_iv, widths, groups = [], 0, 0, [], {}
    for p in points:
        m, h = p.get("measured_ms"), p.get("held_out_ms")
        if not (finite(m) and finite(h)) or m <= 0:
            continue
        apes.append(100.0 * abs(h - m) / m)
        lo, hi = p.get("lo_ms"), p.get("hi_ms")
        if finite(lo) and finite(hi) and h > 0:
            inside = lo <= m <= hi
            with_iv += 1
            covered += inside
            widths.append(100.0 * (hi - lo) / h)
            g = groups.setdefault(p.get("held_out_group") or p.get("cnn"), [0, 0])
            g[0] += inside
            g[1] += 1
    if not apes:
        return None
    return {
        "n": len(apes),
        "mape": statistics.fmean(apes),
        "median": statistics.median(apes),
        "max": max(apes),
        "coverage": 100.0 * covered / with_iv if with_iv else None,
        "coverage_se": coverage_se(groups),
        "width": statistics.median(widths) if widths else None,
    }


def coverage_text(st):
    """'coverage ± its standard error' ('–' without intervals)."""
    if not st or st["coverage"] is None:
        return "–"
    se = st["coverage_se"]
    return pct(st["coverage"]) + (" ± %.1f" % se if se is not None else "")


def spread(points):
    v = [100.0 * p["spread_between"] for p in points if finite(p.get("spread_between"))]
    return statistics.fmean(v) if v else None


def noise_floor(points):
    """The truths' own error from two halves of each point's traces (validate's noise_floor)."""
    v = [100.0 * p["noise_floor"] for p in points if finite(p.get("noise_floor"))]
    return statistics.fmean(v) if v else None


def per_model_ape(points):
    """{model: its MAPE} over held-out points."""
    per = {}
    for p in points:
        m, h = p.get("measured_ms"), p.get("held_out_ms")
        if finite(m) and finite(h) and m > 0:
            per.setdefault(p["cnn"], []).append(100.0 * abs(h - m) / m)
    return {k: statistics.fmean(v) for k, v in per.items()}


def mape_se(points):
    """The standard error of the MAPE across CNNs: points of one CNN are not independent."""
    v = list(per_model_ape(points).values())
    return statistics.stdev(v) / len(v) ** 0.5 if len(v) >= 2 else None


def mape_text(points):
    """'MAPE ± its standard error' of held-out points ('–' without any)."""
    st = stats(points)
    if not st:
        return "–"
    se = mape_se(points)
    return pct(st["mape"]) + (" ± %.1f" % se if se is not None else "")


def conv_only(points):
    # the benchmarked sum (convs, and matmuls where the fit benchmarks them);
    # reports of older aggregators have conv_ms alone
    v = [100.0 * abs(p.get("bench_ms", p["conv_ms"]) - p["measured_ms"]) / p["measured_ms"]
         for p in points if finite(p.get("bench_ms", p.get("conv_ms")))
         and finite(p.get("measured_ms")) and p["measured_ms"] > 0]
    return statistics.fmean(v) if v else None


def by_device_size(doc):
    """{(device, size): (device json, [points])}"""
    out = {}
    for d in doc.get("devices", []) if doc else []:
        for p in d.get("points", []):
            key = (d["device"], size_of(p.get("model_id")))
            out.setdefault(key, (d, []))[1].append(p)
    return out


def model_text(d):
    m = d.get("model", {})
    feats = ", ".join(m.get("features", [])) or "conv sum only"
    return "%s, %s weights: %s" % (m.get("form"), m.get("weighting"), feats)


def devices_text(settings):
    """"cpu:1,cpu:2,cuda:0" as "cpu with 1 thread, cpu with 2 threads, cuda:0"."""
    specs = settings.get("devices") or ",".join(
        "cpu:" + t for t in settings.get("threads", "").split(",") if t)
    out = []
    for spec in specs.split(","):
        if spec.startswith("cpu:"):
            t = spec[4:]
            out.append("cpu with %s thread%s" % (t, "" if t == "1" else "s"))
        elif spec:
            out.append(spec)
    return ", ".join(out)


def rounds_for_floor(path):
    """A line per device whose floor is above its goal: the rounds the goal needs, from
    bench/trace_noise.py's JSON (none when there is none)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        noise = json.load(f)
    out = []
    for dev, r in sorted(noise.items()):
        if r["floor_pct"] <= r["goal_pct"] or not r["floor_by_traces"]:
            continue
        last = r["floor_by_traces"][-1]
        iters = (" (the iterations inside one trace alone would give %.1f %%)"
                 % r["iteration_only_pct"] if "iteration_only_pct" in r else "")
        out.append("*Rounds for the floor*, %s (bench/trace_noise.py, from the stored traces): a "
                   "trace varies %.1f %% around its point%s; the floor from the first %d traces "
                   "of every point is %.2f %%, so at one over the root of the rounds the %g %% "
                   "goal needs about **%d rounds**."
                   % (short_device(dev), r["sd_pct"], iters, last["k"], last["floor_pct"],
                      r["goal_pct"], r["rounds_for_goal"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--validate", action="append", default=[],
                    help="NAME=FILE: the validate JSON of one analysis (main, family, ...)")
    for name in ("validate-err", "op-times", "op-points", "class-layers", "stored", "timeline",
                 "conditions", "done", "failed",
                 "requested", "settings", "load", "plot", "plot-link", "plot-note", "repo",
                 "out", "outside", "outside-truth", "trace-noise"):
        ap.add_argument("--" + name, default="")
    ap.add_argument("--outside-pred", action="append", default=[],
                    help="an outside CNN's `aggregator predict --format csv`")
    for name in ("validate-status", "measure-s", "total-s"):
        ap.add_argument("--" + name, type=int, default=0)
    ap.add_argument("--report-only", action="store_true",
                    help="the analyses are an earlier run's: this run wrote the report alone")
    a = ap.parse_args()

    docs = {}
    for item in a.validate:
        name, _, path = item.partition("=")
        if path and os.path.exists(path):
            with open(path) as f:
                docs[name] = json.load(f)

    requested = [m for m in a.requested.split(",") if m]
    outside = [m for m in a.outside.split(",") if m]
    done = [r[0] for r in read_tsv(a.done) if r[0] not in outside]
    failed = read_tsv(a.failed)
    settings = dict(kv.split("=", 1) for kv in a.settings.split())
    lines = []
    w = lines.append

    order = ("round-robin over the whole set (a round is every CNN once), up to %s extra "
             "rounds for a CNN whose rounds disagree (bench/accuracy_remeasure.py)"
             % settings.get("remeasure", "0")
             if settings.get("order") == "round-robin" else "interleaved per CNN")
    w(("Settings: %d of %d CNNs measured in every round (%s), %s px, batch sizes %s; devices %s; %s "
       "rounds " + order.replace("%", "%%") + ", each a conv benchmark of the CNN's convs and "
       "one trace (a fresh process per batch size) of %s warm-up + %s measured iterations, on "
       "each device in turn; conv benchmarks with a %s ms budget and at most %s repetitions per "
       "item. The fit uses the geometric mean of the rounds on both sides (median, p10 and min "
       "below as alternatives).")
      % (len(done), len(requested), ", ".join(done) or "none", settings.get("input"),
         settings.get("batches"), devices_text(settings),
         settings.get("rounds"), settings.get("warmup"), settings.get("iters"),
         settings.get("bench_budget"), settings.get("max_reps")))
    w("")
    left = [m for m in requested + outside
            if m not in done + outside_done(a) and m not in [f[0] for f in failed]]
    if failed:
        w("Failed: " + "; ".join("%s (%s)" % (f[0], f[1] if len(f) > 1 else "?") for f in failed)
          + ".")
        w("")
    if left:
        w("Not every round measured yet (time budget; the analysis uses the rounds there are): %s." % ", ".join(left))
        w("")
    timeline = read_tsv(a.timeline)
    if timeline:
        total = sum(int(r[4]) - int(r[2]) for r in timeline)
        per_cnn = {}
        for r in timeline:
            per_cnn.setdefault(r[0], []).append((int(r[2]), int(r[4])))
        spans = [max(e for _, e in v) - min(s for s, _ in v) for v in per_cnn.values()]
        if a.report_only:
            run = "this run wrote the report again from the last analysis of the rounds"
        else:
            run = ("this run: %d s of measuring, %d s with the pipeline, fit and validation; %s"
                   % (a.measure_s, a.total_s, a.load or "load not sampled"))
        w("Measuring took %.1f h in all (%s). All rounds of one CNN, on both devices, were taken "
          "within %d s of each other (median over CNNs; at most %d s)."
          % (total / 3600.0, run, statistics.median(spans), max(spans)))
        w("")

    stored = read_tsv(a.stored)
    if stored:
        w("| device | models traced | traces ok | traces failed | conv results stored |")
        w("|---|---:|---:|---:|---:|")
        for r in stored:
            w("| %s | %s | %s | %s | %s |" % tuple(r[:5]))
        w("")

    report_conditions(w, read_tsv(a.conditions), docs)

    main_doc = docs.get("main")
    if a.validate_status != 0 or not main_doc:
        err = open(a.validate_err).read().strip() if os.path.exists(a.validate_err) else ""
        w("**`aggregator validate` failed** (exit %d): %s" % (a.validate_status,
                                                             err or "no message"))
        w("")
    else:
        report_accuracy(w, docs, a.trace_noise)
        report_apart(w, docs)
        report_cnns_before(w, docs)
        report_stability(w, docs)
        report_ranking(w, docs["main"])
        report_op_times(w, read_tsv(a.op_times))
        report_class_fit(w, read_tsv(a.op_points), read_tsv(a.class_layers))
        report_per_cnn(w, docs)
    if outside:
        # The families the fit trained on: its CNNs with a round measured,
        # as the main validation saw them (a study stopped by its time
        # budget may have no CNN with every round).
        fitted = sorted({c["cnn"] for d in docs.get("main", {}).get("devices", [])
                         for c in d.get("per_cnn", []) if c.get("points")})
        report_outside(w, outside, fitted or done, a.outside_pred, read_tsv(a.outside_truth))

    if a.plot_note:
        w("No chart: %s." % a.plot_note)
    elif a.plot:
        rel = a.plot_link or os.path.relpath(a.plot, os.path.dirname(os.path.abspath(a.out)))
        w("![predicted vs measured](%s)" % rel)
        w("")
        w("Predicted (leave-one-CNN-out, nested) against measured iteration time, every device, "
          "CNN and batch, with the identity line: [%s](%s)." % (os.path.basename(a.plot), rel))
    w("")
    text = "\n".join(lines)
    # The report is meant to be committed: no paths of this machine in it.
    # Only a path that starts with the repository's: a relative link that
    # climbs out of a report written elsewhere ("../<repo>/bench/...")
    # holds the same characters and must stay a working link.
    if a.repo:
        repo = re.escape(a.repo.rstrip("/"))
        text = re.sub(r"(?<![\w./-])" + repo + r"/", "", text)
        text = re.sub(r"(?<![\w./-])" + repo + r"(?![\w/-]|\.\w)", ".", text)
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        text = re.sub(r"(?<![\w./-])" + re.escape(home.rstrip("/")) + r"(?=/|\b)", "~", text)
    with open(a.out, "w") as f:
        f.write(text)


def report_conditions(w, rows, docs):
    """How many benchmarks and traces were taken while other processes used
    the machine, and the error with and without the disturbed traces."""
    if not rows:
        return
    w("### Measurement conditions")
    w("")
    w("What other processes used of the machine while each measurement ran (the agents wait "
      "for quiet, measure again what was taken under load and mark what stays *disturbed*; "
      "the fit leaves disturbed traces out, and uses a disturbed benchmark only where its "
      "measurement has no quiet one).")
    w("")
    w("| device | kind | measured | disturbed | measured again | with load | others, median %% | "
      "others, max %% |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if len(r) >= 8:
            w("| %s | %s | %s | %s | %s | %s | %s | %s |" % tuple(r[:8]))
    w("")
    main, kept = by_device_size(docs.get("main")), by_device_size(docs.get("disturbed"))
    for key in sorted(main):
        s_main = stats(main[key][1])
        s_kept = stats(kept[key][1]) if key in kept else None
        if s_main and s_kept:
            w("- %s, %s px: leave-one-CNN-out MAPE %.1f %% without the disturbed traces, "
              "%.1f %% with them (`--include-disturbed`)."
              % (key[0], key[1], s_main["mape"], s_kept["mape"]))
    w("")


def report_accuracy(w, docs, trace_noise=""):
    main = by_device_size(docs["main"])
    family = by_device_size(docs.get("family"))
    batch = by_device_size(docs.get("batch"))
    baseline = by_device_size(docs.get("baseline"))
    w("## Accuracy per device and input size")
    w("")
    w("Every error is held out of the whole procedure (nested): the form, weighting and features "
      "predicting a CNN were chosen and fitted without it (*CNN*), without its whole family "
      "(*family*: its architectural relatives too: resnet with resnext, the mbconv CNNs, ...), or "
      "without the batch size predicted, for "
      "every CNN (*batch*), the CNN error with its standard error across CNNs. *spread*: the "
      "mean run-to-run spread of the same points in this run, (max − min) / median over the "
      "rounds: a range, larger than the error of a truth taken as their median. *floor*: the "
      "noise floor `aggregator validate` measures, the truths' own error from two halves of each "
      "point's traces (a perfect model would show it). *coverage*: share of held-out truths "
      "inside their 95 %% interval (each calibrated without the CNN or family it covers), with "
      "its standard error across the held-out CNNs or families (the points of one miss "
      "together); *width*: median interval width relative to the "
      "prediction. *baseline*: the published method's form (every aggregated non-conv feature, "
      "ordinary least squares, no selection). Goals on one thread (or a GPU): CNN ≤ %.0f %%, "
      "family ≤ %.0f %%, batch ≤ %.0f %%; on several threads %.0f, %.0f and %.0f %%; floor ≤ "
      "%.0f %% (enough rounds, spread over time); coverage %.0f–%.0f %% (CNN and family)."
      % (GOALS["cnn"], GOALS["family"], GOALS["batch"], GOALS_THREADS["cnn"],
         GOALS_THREADS["family"], GOALS_THREADS["batch"], FLOOR_GOAL, COVERAGE[0],
         COVERAGE[1]))
    w("")
    w("| device | px | CNNs | points | **CNN** | family | batch | spread | floor | coverage | "
      "width | baseline | conv sum alone | goals met |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for key in sorted(main):
        d, pts = main[key]
        s = stats(pts)
        if not s:
            continue
        sf = stats(family[key][1]) if key in family else None
        sb = stats(batch[key][1]) if key in batch else None
        sbl = stats(baseline[key][1]) if key in baseline else None
        sp = spread(pts)
        cnns = len({p["cnn"] for p in pts})
        met, missed = [], []
        goals = goals_for(d["device"])
        for name, st, goal in (("CNN", s, goals["cnn"]), ("family", sf, goals["family"]),
                               ("batch", sb, goals["batch"])):
            if not st:
                continue
            ok = st["mape"] <= goal
            (met if ok else missed).append(name)
        floor = noise_floor(pts)
        if floor is not None:
            (met if floor <= FLOOR_GOAL else missed).append("floor")
        for name, st in (("coverage", s), ("family coverage", sf)):
            if st and st["coverage"] is not None:
                ok = COVERAGE[0] <= st["coverage"] <= COVERAGE[1]
                (met if ok else missed).append(name)
        verdict = ("all" if not missed else
                   ("none" if not met else "not " + ", ".join(missed)))
        se = mape_se(pts)
        w("| %s | %s | %d | %d | **%s**%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
          % (d["device"], key[1] or "–", cnns, s["n"], pct(s["mape"]),
             " ± %.1f" % se if se is not None else "",
             pct(sf["mape"]) if sf else "–", pct(sb["mape"]) if sb else "–", pct(sp),
             pct(floor), coverage_text(s), pct(s["width"]), pct(sbl["mape"]) if sbl else "–",
             pct(conv_only(pts)), verdict))
    w("")
    for line in rounds_for_floor(trace_noise):
        w(line)
        w("")

    w("### Every analysis")
    w("")
    w("The model each analysis chose on all CNNs; MAPE, median and max APE of its nested "
      "held-out predictions. *median*, *p10*, *min*: the rounds summarized by their median, "
      "10th percentile or minimum instead of their geometric mean, on both sides. *memory*: "
      "the memory-bound classes summed in one feature (memory.elems), the default "
      "candidates before the study of docs/fitting.md kept them apart. *regress-matmuls*: "
      "the matmuls regressed with the rest "
      "even where every one is benchmarked (run only when the main analysis benchmarked "
      "them). *apart-cnns*, *apart-modern*: the CNNs of 2012–2019 alone, the ConvNeXts and "
      "transformers alone (validate --models), where the study has both. *cnns-before*: the "
      "CNNs alone with their matmuls regressed, the method before matmuls were benchmarked.")
    w("")
    w("| device | px | analysis | MAPE | median | max | coverage | width | model chosen on every "
      "CNN |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---|")
    order = ["main", "family", "batch", "median", "p10", "min", "memory", "regress-matmuls",
             "apart-cnns", "apart-modern", "cnns-before", "baseline"]
    for name in order:
        if name not in docs:
            continue
        for key, (d, pts) in sorted(by_device_size(docs[name]).items()):
            s = stats(pts)
            if s:
                w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (short_device(d["device"]), key[1] or "–", name, pct(s["mape"]),
                     pct(s["median"]), pct(s["max"]), coverage_text(s), pct(s["width"]),
                     model_text(d)))
    w("")

    if "family" in docs:
        w("### Per family: leave-one-family-out MAPE (and leave-one-CNN-out)")
        w("")
        fam = by_device_size(docs["family"])
        keys = sorted(fam)
        families = sorted({p["family"] for k in keys for p in fam[k][1]})
        w("| family | CNNs | " + " | ".join("%s, %s px" % (short_device(fam[k][0]["device"]),
                                                        k[1]) for k in keys) + " |")
        w("|---|---:|" + "---:|" * len(keys))
        for f in families:
            cells, cnns = [], set()
            for k in keys:
                fp = [p for p in fam[k][1] if p["family"] == f]
                mp = [p for p in main.get(k, (None, []))[1] if p["family"] == f]
                cnns |= {p["cnn"] for p in fp}
                sf, sm = stats(fp), stats(mp)
                cells.append("%s (%s)" % (pct(sf["mape"]) if sf else "–",
                                          pct(sm["mape"]) if sm else "–"))
            w("| %s | %d | %s |" % (f, len(cnns), " | ".join(cells)))
        w("")

    if "batch" in docs:
        w("### Unseen batch sizes: each batch size predicted by a model fitted without it")
        w("")
        bat = by_device_size(docs["batch"])
        keys = sorted(bat)
        batches = sorted({p["batch"] for k in keys for p in bat[k][1]})
        w("| batch | " + " | ".join("%s, %s px" % (short_device(bat[k][0]["device"]), k[1])
                                   for k in keys) + " |")
        w("|---:|" + "---:|" * len(keys))
        for b in batches:
            cells = []
            for k in keys:
                s = stats([p for p in bat[k][1] if p["batch"] == b])
                cells.append(pct(s["mape"]) if s else "–")
            w("| %d | %s |" % (b, " | ".join(cells)))
        w("")


def report_apart(w, docs):
    """The CNNs of 2012-2019 and the ConvNeXts and transformers, each with
    its errors in the fit on every model (together) and in a fit on its
    kind alone (apart)."""
    main = by_device_size(docs["main"])
    if not any(len({model_kind(p["cnn"]) for p in pts}) > 1 for _, pts in main.values()):
        return
    family_docs = by_device_size(docs.get("family"))
    apart = {k: by_device_size(docs.get("apart-" + k)) for k in ("cnns", "modern")}
    w("### CNNs and transformers, together and apart")
    w("")
    w("*together*: the nested errors of the models of each kind in the analyses above, where "
      "every model of the study is fitted on (hold out one model; hold out its family); "
      "*apart*: a study of that kind alone, the same procedure on its models only "
      "(`validate --models`). *ConvNeXts and transformers*: the families %s. Each MAPE with "
      "its standard error across models; *floor* and *benchmarks alone* over the same points."
      % ", ".join(MODERN_FAMILIES))
    w("")
    w("| device | px | models | count | points | together: model out | together: family out | "
      "apart: model out | floor | benchmarks alone |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    labels = (("cnns", "CNNs of 2012–2019"), ("modern", "ConvNeXts and transformers"),
              ("all", "all"))
    for key in sorted(main):
        d, pts = main[key]
        for k, label in labels:
            def sel(p, k=k):
                return k == "all" or model_kind(p["cnn"]) == {"cnns": "cnn"}.get(k, k)
            sub = [p for p in pts if sel(p)]
            s = stats(sub)
            if not s:
                continue
            fam = [p for p in family_docs.get(key, (None, []))[1] if sel(p)]
            ap = (pts if k == "all" else
                  [p for p in apart.get(k, {}).get(key, (None, []))[1]])
            w("| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |"
              % (short_device(d["device"]), key[1] or "–", label,
                 len({p["cnn"] for p in sub}), s["n"], mape_text(sub), mape_text(fam),
                 mape_text(ap), pct(noise_floor(sub)), pct(conv_only(sub))))
    w("")


def report_cnns_before(w, docs):
    """The CNNs' own errors now (every model fitted together, matmuls
    benchmarked: main) against the method as it stood before matmuls were
    benchmarked (the CNNs fitted alone, their classifiers' matmuls regressed
    with the rest: cnns-before), on the same truths, paired CNN by CNN."""
    before = by_device_size(docs.get("cnns-before"))
    if not before:
        return
    main = by_device_size(docs["main"])
    rows = []
    for key in sorted(main):
        if key not in before:
            continue
        now_pts = [p for p in main[key][1] if model_kind(p["cnn"]) == "cnn"]
        a, b = per_model_ape(now_pts), per_model_ape(before[key][1])
        common = sorted(set(a) & set(b))
        if len(common) < 2:
            continue
        now_pts = [p for p in now_pts if p["cnn"] in common]
        b_pts = [p for p in before[key][1] if p["cnn"] in common]
        diffs = [a[c] - b[c] for c in common]
        d_se = statistics.stdev(diffs) / len(diffs) ** 0.5
        rows.append("| %s | %s | %d | %d | %s | %s | %+.1f ± %.1f | %d of %d | %s |"
                    % (short_device(main[key][0]["device"]), key[1] or "–", len(common),
                       stats(now_pts)["n"], mape_text(b_pts), mape_text(now_pts),
                       statistics.fmean(diffs), d_se, sum(x > 0 for x in diffs), len(diffs),
                       pct(noise_floor(now_pts))))
    if not rows:
        return
    w("### The CNNs before and after the matmul benchmarks")
    w("")
    w("The CNNs of 2012–2019 held out one at a time (nested), on the same truths: *before*, the "
      "method as it stood before matmuls were benchmarked (the CNNs fitted alone, their "
      "classifiers' matrix products regressed with the rest: `validate --models CNNS "
      "--regress-matmuls`); *now*, the main analysis (every model of the study fitted "
      "together, matmuls benchmarked). *Paired*: now minus before, CNN by CNN, with its "
      "standard error across CNNs (positive: worse now); *worse*: how many CNNs read worse now.")
    w("")
    w("| device | px | CNNs | points | before | now | paired now − before | worse | floor |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        w(r)
    w("")


def report_stability(w, docs):
    """Does the selection swing with the grouping? The model each analysis
    chose on every model, and how many of its folds (one per held-out
    group) chose the same."""
    rows = []
    for name in ("main", "family"):
        for key, (d, pts) in sorted(by_device_size(docs.get(name)).items()):
            folds = [c.get("fold_model") for c in d.get("per_cnn", []) if c.get("fold_model")]
            if not folds:
                continue
            common = max(set(folds), key=folds.count)
            # as validate words a fold's model (tc_fit_run_spec_describe)
            m = d.get("model", {})
            chosen = "%s, %s weights: %s" % (
                m.get("form"), "relative" if m.get("weighting") == "relative" else "no",
                " + ".join(m.get("features", [])) or "no features (conv sum only)")
            rows.append("| %s | %s | %s | %s | %d | %d | %s (%d) |"
                        % (short_device(d["device"]), key[1] or "–", name, chosen,
                           len(set(folds)), folds.count(chosen), common, folds.count(common)))
    if not rows:
        return
    w("### Does the selection swing?")
    w("")
    w("The model chosen on every model of the study, per grouping of the folds (*main*: one "
      "model held out; *family*: a family), and how the nested run's folds chose: how many "
      "distinct models, how many chose the one chosen on every model, and the most common "
      "(per held-out model, the fold that predicted it).")
    w("")
    w("| device | px | grouping | chosen on every model | distinct fold models | folds choosing "
      "it | most common (folds) |")
    w("|---|---:|---|---|---:|---:|---|")
    for r in rows:
        w(r)
    w("")


def outside_done(a):
    outside = [m for m in a.outside.split(",") if m]
    return [r[0] for r in read_tsv(a.done) if r[0] in outside]


def report_outside(w, outside, study, pred_files, truth_rows):
    """CNNs the study never fitted on, predicted from their ONNX export and
    conv benchmarks by the fit on the study's CNNs, against the geometric
    mean of their measured rounds: apart, those of a family the study has no CNN of
    (*new family*) and the other sizes of the study's families."""
    truth = {}
    for r in truth_rows:  # device, model_id, batch, traces, geomean_ms, spread
        truth[(r[0], r[1], int(r[2]))] = (float(r[4]), float(r[5]) if r[5] else None)
    rows, unpredicted = [], []
    for path in pred_files:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for p in csv.DictReader(f):
                key = (p["device"], p["model"], int(p["batch"]))
                if p["status"] != "ok":
                    unpredicted.append("%s at batch %s on %s: %s (%s)"
                                       % (p["model"], p["batch"], short_device(p["device"]),
                                          p["status"], p.get("reason", "")))
                    continue
                if key not in truth:
                    unpredicted.append("%s at batch %s on %s: no measured time"
                                       % (p["model"], p["batch"], short_device(p["device"])))
                    continue
                m, sp = truth[key]
                rows.append({"device": p["device"], "model_id": p["model"],
                             "cnn": cnn_name(p["model"]),
                             "batch": key[2], "measured_ms": m,
                             "held_out_ms": float(p["iteration_ms"]),
                             "lo_ms": float(p["lo_ms"]) if p["lo_ms"] else None,
                             "hi_ms": float(p["hi_ms"]) if p["hi_ms"] else None,
                             "spread_between": sp})
    w("## CNNs outside the study's set")
    w("")
    w("CNNs measured with the study's settings (in its rounds when they were named with "
      "`--outside` from its start) but never fitted on: only their conv benchmarks went "
      "into the study's database, and the fit on the study's CNNs predicted each from its "
      "structure (the ONNX export of torchvision's model, or of its Python file) and those "
      "benchmarks (`aggregator predict --model torchvision:NAME` or `FILE.py:FUNC`), against "
      "the geometric mean of their measured rounds (the fit's statistic). Goal for a new "
      "family: MAPE ≤ %.0f %% on one thread (or a GPU), ≤ %.0f %% on several."
      % (GOALS["outside"], GOALS_THREADS["outside"]))
    w("")
    if not rows:
        w("No outside CNN was predicted%s." % (": " + "; ".join(unpredicted[:5])
                                                if unpredicted else ""))
        w("")
        return
    devices = sorted({r["device"] for r in rows})
    known = {family(c) for c in study}
    kind = {r["cnn"]: "in-family" if family(r["cnn"]) in known else "new family" for r in rows}
    w("*new family*: no CNN of its architectural family (the fit's grouping) is in the study; "
      "*in-family*: another size of a family the study trains on. MAPE ± its standard error "
      "across CNNs.")
    w("")
    w("| CNN | family | px | " + " | ".join("%s: MAPE (max)" % short_device(d)
                                            for d in devices)
      + " | coverage | spread between rounds |")
    w("|---|---|---:|" + "---:|" * len(devices) + "---:|---:|")
    groups = sorted({(kind[r["cnn"]] == "in-family", r["cnn"], size_of(r["model_id"]))
                     for r in rows})
    rowsel = [(("%s" % g[1], family(g[1]) + (" (new)" if kind[g[1]] == "new family" else ""),
                g[2]), lambda r, g=g: (r["cnn"], size_of(r["model_id"])) == g[1:])
              for g in groups]
    for k in ("new family", "in-family"):
        if k in kind.values():
            rowsel.append((("**%s**" % k, "", None), lambda r, k=k: kind[r["cnn"]] == k))
    rowsel.append((("**all**", "", None), lambda r: True))
    for label, sel in rowsel:
        pts = [r for r in rows if sel(r)]
        cells = []
        for d in devices:
            dp = [r for r in pts if r["device"] == d]
            s = stats(dp)
            se = mape_se(dp) if len({r["cnn"] for r in dp}) > 1 else None
            cells.append("%s%s (%s)" % (pct(s["mape"]), " ± %.1f" % se if se is not None else "",
                                        pct(s["max"])) if s else "–")
        s = stats(pts)
        w("| %s | %s | %s | %s | %s | %s |" % (label[0], label[1], label[2] or "–",
                                              " | ".join(cells),
                                              coverage_text(s),
                                              pct(spread(pts))))
    w("")
    missing = [m for m in outside if m not in {r["cnn"] for r in rows}]
    if missing:
        w("Not predicted: %s." % ", ".join(missing))
        w("")
    if unpredicted:
        w("Rows without a prediction: %s." % "; ".join(unpredicted[:10]))
        w("")


def paired_quantiles(qs):
    """Split-conformal 2.5 % and 97.5 % quantiles (as predict's
    tc_predict_ratio_interval); None with too few."""
    qs = sorted(qs)
    m = len(qs)
    k_lo, k_hi = math.floor((m + 1) * 0.025), math.ceil((m + 1) * 0.975)
    if m == 0 or k_lo < 1 or k_hi > m:
        return None
    return qs[k_lo - 1], qs[k_hi - 1]


def report_ranking(w, doc):
    """Two devices told apart: at each point both predicted (held out), the
    predicted ratio against the measured one; by their two intervals, and by
    the paired ratio interval predict uses, calibrated for each CNN on the
    other CNNs' points."""
    devs = doc.get("devices", [])
    if len(devs) < 2:
        return
    w("## Telling the devices apart")
    w("")
    w("For each pair of devices, at every (CNN, batch) both predicted held out: is the faster "
      "device predicted faster, and, where the predictions differ by more than 10 %, are the two "
      "95 % intervals apart? *Paired* is how `predict` decides: the interval of the ratio of "
      "the two times, from how the two devices' held-out errors on the same CNNs moved together "
      "(here each CNN's from the other CNNs' points): the share of the points differing by more "
      "than 10 % that it tells apart, and how many of all the points it tells apart it ranks "
      "right.")
    w("")
    w("| devices | points | measured ratio, median | ranked right | differ > 10 % | of those "
      "ranked right | of those with intervals apart | of those told apart, paired | told apart "
      "(paired), ranked right |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i in range(len(devs)):
        for j in range(i + 1, len(devs)):
            a = {(p["model_id"], p["batch"]): p for p in devs[i].get("points", [])}
            b = {(p["model_id"], p["batch"]): p for p in devs[j].get("points", [])}
            keys = [k for k in a.keys() & b.keys()
                    if all(finite(x.get("held_out_ms")) for x in (a[k], b[k]))]
            n = right = far = far_right = apart = far_told = told = told_right = 0
            ratios = []
            for k in keys:
                pa, pb = a[k], b[k]
                n += 1
                ratios.append(pa["measured_ms"] / pb["measured_ms"])
                ok = (pa["held_out_ms"] < pb["held_out_ms"]) == \
                     (pa["measured_ms"] < pb["measured_ms"])
                right += ok
                r = pa["held_out_ms"] / pb["held_out_ms"]
                if abs(r - 1) > 0.10:
                    far += 1
                    far_right += ok
                    if all(finite(x.get("lo_ms")) and finite(x.get("hi_ms")) for x in (pa, pb)):
                        apart += pa["hi_ms"] < pb["lo_ms"] or pb["hi_ms"] < pa["lo_ms"]
                # Paired: slow / fast as predicted; q = (true ratio) / (predicted
                # ratio) at the other CNNs' points.
                slow, fast = (a, b) if pa["held_out_ms"] > pb["held_out_ms"] else (b, a)
                qs = [(slow[o]["measured_ms"] / slow[o]["held_out_ms"]) /
                      (fast[o]["measured_ms"] / fast[o]["held_out_ms"])
                      for o in keys if a[o]["held_out_group"] != pa["held_out_group"]]
                q = paired_quantiles(qs)
                if q and slow[k]["held_out_ms"] / fast[k]["held_out_ms"] * q[0] > 1.0:
                    told += 1
                    told_right += ok
                    far_told += abs(r - 1) > 0.10
            if n:
                w("| %s / %s | %d | %.2f | %s | %d | %s | %s | %s | %s |"
                  % (short_device(devs[i]["device"]), short_device(devs[j]["device"]), n,
                     statistics.median(ratios), pct(100.0 * right / n), far,
                     pct(100.0 * far_right / far) if far else "–",
                     pct(100.0 * apart / far) if far else "–",
                     pct(100.0 * far_told / far) if far else "–",
                     "%s of %d" % (pct(100.0 * told_right / told), told) if told else "–"))
    w("")


def report_per_cnn(w, docs):
    main = docs["main"]
    devices = main.get("devices", [])
    cnns = sorted({c["cnn"] for d in devices for c in d.get("per_cnn", [])})
    if not cnns:
        return
    w("## Per CNN: leave-one-CNN-out MAPE (spread between rounds)")
    w("")
    w("| CNN | family | " + " | ".join(short_device(d["device"]) for d in devices) + " |")
    w("|---|---|" + "---:|" * len(devices))
    for cnn in cnns:
        cells, family = [], ""
        for d in devices:
            row = next((c for c in d.get("per_cnn", []) if c["cnn"] == cnn), None)
            pts = [p for p in d.get("points", []) if p["cnn"] == cnn]
            if pts:
                family = pts[0].get("family", "")
            if row is None or row["points"] == 0:
                cells.append("–")
            else:
                cells.append("%s (%s)" % (pct(row["mape"]), pct(row["spread_between"])))
        w("| %s | %s | %s |" % (cnn, family, " | ".join(cells)))
    w("")


if __name__ == "__main__":
    main()
