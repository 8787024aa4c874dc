#!/usr/bin/python3
"""Write the accuracy study's Markdown report (bench/accuracy.sh).

Reads `aggregator validate --format json`, the held-out points of the stored
fits, what the database holds per device, and the study's bookkeeping (CNNs
done and failed, the timeline of benchmarks and traces)."""
import argparse
import json
import os
import statistics


def pct(v):
    return "–" if v is None else "%.1f %%" % v


def read_tsv(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for name in ("validate", "validate-err", "points", "stored", "timeline", "done", "failed",
                 "requested", "settings", "load", "plot", "plot-link", "plot-note", "repo", "out"):
        ap.add_argument("--" + name, default="")
    for name in ("validate-status", "measure-s", "total-s"):
        ap.add_argument("--" + name, type=int, default=0)
    a = ap.parse_args()

    requested = [m for m in a.requested.split(",") if m]
    done = [r[0] for r in read_tsv(a.done)]
    failed = read_tsv(a.failed)
    settings = dict(kv.split("=", 1) for kv in a.settings.split())
    lines = []
    w = lines.append

    w("Settings: %d of %d CNNs measured (%s), %s px, batch sizes %s; cpu devices with %s "
      "thread(s); traces of %s warm-up + %s measured iterations, %s repeats (each a fresh "
      "process); conv benchmarks with a %s ms budget and at most %s repetitions per item."
      % (len(done), len(requested), ", ".join(done) or "none", settings.get("input"),
         settings.get("batches"), settings.get("threads", "").replace(",", " and "),
         settings.get("warmup"), settings.get("iters"), settings.get("repeat"),
         settings.get("bench_budget"), settings.get("max_reps")))
    w("")
    left = [m for m in requested if m not in done and m not in [f[0] for f in failed]]
    if failed:
        w("Failed: " + "; ".join("%s (%s)" % (f[0], f[1] if len(f) > 1 else "?") for f in failed)
          + ".")
        w("")
    if left:
        w("Not measured yet (time budget): %s." % ", ".join(left))
        w("")
    timeline = read_tsv(a.timeline)
    if timeline:
        spans = [int(r[4]) - int(r[2]) for r in timeline]
        w("Measuring the CNNs took %d s in all (this run: %d s of measuring, %d s with the "
          "pipeline, fit and validation; %s). A CNN's conv benchmarks and its traces on one "
          "device were taken within %d s of each other (median over CNNs and devices; at most "
          "%d s); convs shared with a CNN measured earlier are not measured again."
          % (sum(int(r[4]) - int(r[2]) for r in timeline), a.measure_s, a.total_s,
             a.load or "load not sampled", statistics.median(spans), max(spans)))
        w("")

    stored = read_tsv(a.stored)
    if stored:
        w("| device | models traced | traces ok | traces failed | conv results stored |")
        w("|---|---:|---:|---:|---:|")
        for r in stored:
            w("| %s | %s | %s | %s | %s |" % tuple(r[:5]))
        w("")

    if a.validate_status != 0:
        err = open(a.validate_err).read().strip() if os.path.exists(a.validate_err) else ""
        w("**`aggregator validate` failed** (exit %d): %s" % (a.validate_status,
                                                             err or "no message"))
        w("")
    else:
        with open(a.validate) as f:
            data = json.load(f)
        devices = data.get("devices", [])
        w("## Leave-one-CNN-out error per device")
        w("")
        w("Each CNN is predicted by a model whose form, weighting and features were chosen and "
          "fitted without it. *spread*: mean run-to-run spread of the traces ((max − min) / median "
          "of the repeat medians); *conv-only*: predicting the conv sum alone. An error at or "
          "below the spread cannot be resolved on this machine.")
        w("")
        w("| device | CNNs | points | MAPE | median APE | max APE | conv-only MAPE | spread | model |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for d in devices:
            model = d.get("model", {})
            w("| %s | %d | %d | **%s** | %s | %s | %s | %s | %s %s: %s |"
              % (d["device"], d["cnns"], d["points"], pct(d["mape"]), pct(d["median_ape"]),
                 pct(d["max_ape"]), pct(d["conv_only_mape"]), pct(d["spread_within"]),
                 model.get("form"), model.get("weighting"),
                 ", ".join(model.get("features", [])) or "conv sum only"))
        w("")
        cnns = sorted({c["cnn"] for d in devices for c in d.get("per_cnn", [])})
        if cnns:
            w("## Per CNN: MAPE (spread)")
            w("")
            w("| CNN | " + " | ".join(d["device"] for d in devices) + " |")
            w("|---|" + "---:|" * len(devices))
            for cnn in cnns:
                cells = []
                for d in devices:
                    row = next((c for c in d.get("per_cnn", []) if c["cnn"] == cnn), None)
                    if row is None or row["points"] == 0:
                        cells.append("–")
                    else:
                        cells.append("%s (%s)" % (pct(row["mape"]), pct(row["spread_within"])))
                w("| %s | %s |" % (cnn, " | ".join(cells)))
            w("")

    if a.plot_note:
        w("No chart: %s." % a.plot_note)
    elif a.plot:
        rel = a.plot_link or os.path.relpath(a.plot, os.path.dirname(os.path.abspath(a.out)))
        w("![predicted vs measured](%s)" % rel)
        w("")
        w("Predicted (leave-one-CNN-out) against measured iteration time, every device, CNN and "
          "batch: [%s](%s)." % (os.path.basename(a.plot), rel))
    w("")
    text = "\n".join(lines)
    # The report is meant to be committed: no paths of this machine in it.
    if a.repo:
        text = text.replace(a.repo.rstrip("/") + "/", "").replace(a.repo, ".")
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        text = text.replace(home, "~")
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
