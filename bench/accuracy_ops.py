"""The accuracy report's op-class sections (bench/accuracy_report.py): the
profiler's time per op class, and how well each class's time follows its
feature, CNN by CNN held out (what timing it with the vendor library could
buy at most)."""
import statistics

from accuracy_fmt import cnn_name, pct, short_device


def report_op_times(w, rows):
    if not rows:
        return
    w("## Where the time goes: the profiler's time per op class")
    w("")
    w("One profiled training step per trace (an extra step after the timed ones), summed over "
      "every trace of the device; the profiler adds a cost of its own per op, so small ops read "
      "larger here than in a timed step. The non-conv classes are what the regression stands "
      "for.")
    w("")
    per = {}
    for dev, cls, ms, traces in rows:
        per.setdefault(dev, []).append((cls, float(ms), int(traces)))
    classes = sorted({c for v in per.values() for c, _, _ in v},
                     key=lambda c: -sum(ms for v in per.values() for cc, ms, _ in v if cc == c))
    devs = sorted(per)
    w("| op class | " + " | ".join(short_device(d) for d in devs) + " |")
    w("|---|" + "---:|" * len(devs))
    totals = {d: sum(ms for _, ms, _ in per[d]) for d in devs}
    for c in classes:
        cells = []
        for d in devs:
            ms = sum(m for cc, m, _ in per[d] if cc == c)
            cells.append(pct(100.0 * ms / totals[d]) if totals[d] else "–")
        w("| %s | %s |" % (c, " | ".join(cells)))
    w("")


# The classes the regression stands for, each with features that follow it:
# (op class, the features' names, the class's quantity that scales with the
# batch, the one that does not). None: every layer and every parameter.
CLASS_FEATURES = [
    ("bn", "bn.elems", "elems", "layers"),
    ("gemm", "gemm.flops", "flops", "layers"),
    ("gemm", "gemm.flops + gemm.params", "flops", "params"),
    ("other", "total.layers + total.params", None, None),
    ("pool", "pool.elems", "elems", "layers"),
    ("pool", "pool.elems_out", "elems_out", "layers"),
    ("act", "act.elems", "elems", "layers"),
    ("concat", "concat.elems", "elems", "layers"),
    ("eltwise", "eltwise.elems", "elems", "layers"),
    # transformer blocks (convnext and shufflenet among the CNNs)
    ("norm", "norm.elems", "elems", "layers"),
    ("softmax", "softmax.elems", "elems", "layers"),
    ("copy", "copy.elems", "elems", "layers"),
]


def fit_two(rows):
    """Non-negative a, b minimising the relative error of a*f1 + b*f2 over
    rows of (f1, f2, y), y > 0."""
    def solve(use):
        s11 = s12 = s22 = t1 = t2 = 0.0
        for f1, f2, y in rows:
            x1, x2 = (f1 / y if use[0] else 0.0), (f2 / y if use[1] else 0.0)
            s11 += x1 * x1; s12 += x1 * x2; s22 += x2 * x2; t1 += x1; t2 += x2
        det = s11 * s22 - s12 * s12
        if use[0] and use[1]:
            return ((t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det) if det > 0 else None
        if use[0]:
            return (t1 / s11, 0.0) if s11 > 0 else None
        return (0.0, t2 / s22) if s22 > 0 else None

    def loss(c):
        return sum(((c[0] * f1 + c[1] * f2) - y) ** 2 / (y * y) for f1, f2, y in rows)

    both = solve((True, True))
    if both and both[0] >= 0 and both[1] >= 0:
        return both
    singles = [c for c in (solve((True, False)), solve((False, True))) if c and min(c) >= 0]
    return min(singles, key=loss) if singles else (0.0, 0.0)


def report_class_fit(w, points, layers):
    """How well each op class's profiled time follows its feature, CNN by
    CNN held out: what regressing that class costs the prediction."""
    if not points or not layers:
        return
    lay, total = {}, {}
    for model, cls, n, params, flops, elems, elems_out in layers:
        q = {"layers": float(n), "params": float(params), "flops": float(flops),
             "elems": float(elems), "elems_out": float(elems_out)}
        lay[(model, cls)] = q
        t = total.setdefault(model, {"layers": 0.0, "params": 0.0})
        t["layers"] += q["layers"]
        t["params"] += q["params"]
    steps, times = {}, {}
    for dev, model, batch, trace, step_ms, cls, ms in points:
        key = (dev, model, int(batch))
        steps.setdefault(key, {})[trace] = float(step_ms)
        times.setdefault(key + (cls,), {})[trace] = float(ms)
    w("## How well each op class follows its feature")
    w("")
    w("Each class's time in the profiled steps (the median of the rounds) regressed on its feature "
      "and its layer count (or the second feature named; for `other`, the framework's per-op and "
      "optimizer time: every layer and every parameter), non-negative, relative error, one CNN "
      "held out at a time. *Own "
      "error*: the median error of the held-out class times; *adds*: the mean error it adds to "
      "the step, as a share of the step. A class that adds little is regressed well enough; the "
      "ones that add most are what timing the class with the vendor library, as the convs are, "
      "could buy at most.")
    w("")
    for dev in sorted({k[0] for k in steps}):
        keys = sorted(k for k in steps if k[0] == dev)
        step = {k: statistics.median(steps[k].values()) for k in keys}
        cnns = sorted({k[1] for k in keys})
        w("%s (%d CNNs):" % (short_device(dev), len(cnns)))
        w("")
        w("| op class | share of the step | feature | own error | adds | most, CNN |")
        w("|---|---:|---|---:|---:|---|")
        for cls, feature, scaled, fixed in CLASS_FEATURES:
            rows = []
            for k in keys:
                per = times.get(k + (cls,), {})
                y = statistics.median(per.get(t, 0.0) for t in steps[k])
                if scaled:
                    q = lay.get((k[1], cls), {})
                    f1, f2 = q.get(scaled, 0.0) * k[2], q.get(fixed, 0.0)
                else:
                    f1, f2 = total.get(k[1], {}).get("layers", 0.0), total.get(k[1], {}).get("params", 0.0)
                rows.append((k[1], f1, f2, y, step[k]))
            own, adds, per_cnn = [], [], {}
            for cnn in cnns:
                a, b = fit_two([(f1, f2, y) for m, f1, f2, y, _ in rows if m != cnn and y > 0])
                for m, f1, f2, y, st in rows:
                    if m != cnn:
                        continue
                    err = abs(a * f1 + b * f2 - y)
                    if y > 0:
                        own.append(err / y)
                    adds.append(err / st)
                    per_cnn.setdefault(cnn, []).append(err / st)
            share = statistics.mean(r[3] / r[4] for r in rows)
            worst = max(per_cnn, key=lambda c: statistics.mean(per_cnn[c]))
            w("| %s | %s | `%s` | %s | %s | %s (%s) |" % (
                cls, pct(100.0 * share), feature,
                pct(100.0 * statistics.median(own)) if own else "–",
                pct(100.0 * statistics.mean(adds)), cnn_name(worst),
                pct(100.0 * statistics.mean(per_cnn[worst]))))
        w("")
