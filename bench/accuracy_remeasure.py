#!/usr/bin/env python3
"""accuracy_remeasure.py DIR UPTO FACTOR MIN_PCT CNN...

Which CNNs of an accuracy study (bench/accuracy.sh) to measure again because
their rounds disagree. From the trace logs of DIR/logs
(trace-CNN-DEVICE-PXpx-rLABEL.out, `agent trace` output: model, batch, status,
median_ms, ...) of the rounds before UPTO, a round's label (N: a regular
round, or an extra one numbered so before extra rounds were labelled apart;
RxK: the K-th extra round after round R, after round R and before R+1): a
point (CNN, device, size, batch) whose rounds' medians spread, (max - min) /
median, more than FACTOR times the median spread of its device's points and
more than MIN_PCT %, puts its CNN on the list. Prints
"CNN WORST_SPREAD_PCT" per line, sorted by CNN; nothing when none.
"""
import collections
import glob
import os
import re
import statistics
import sys

NAME = re.compile(r"trace-(.+)-(t\d+|g\d+)-(\d+)px-r(\d+(?:x\d+)?)\.out$")
LABEL = re.compile(r"(\d+)(?:x(\d+))?$")


def order(label):
    """A round's place among the rounds: (R, K) for RxK, (N, 0) for N."""
    m = LABEL.match(label)
    if not m:
        raise ValueError("'%s' is not a round (N or RxK)" % label)
    return (int(m.group(1)), int(m.group(2) or 0))


def main(argv):
    if len(argv) < 5:
        sys.stderr.write(__doc__)
        return 2
    try:
        upto = order(argv[1])
    except ValueError as e:
        sys.stderr.write("accuracy_remeasure.py: UPTO: %s\n" % e)
        return 2
    d, factor, min_pct = argv[0], float(argv[2]), float(argv[3])
    cnns = set(argv[4:])
    times = collections.defaultdict(list)  # (cnn, device, px, batch) -> medians
    for path in glob.glob(os.path.join(d, "logs", "trace-*-r*.out")):
        m = NAME.match(os.path.basename(path))
        if not m or m.group(1) not in cnns or order(m.group(4)) >= upto:
            continue
        with open(path) as f:
            for line in f:
                x = line.split()
                if len(x) >= 4 and x[2] == "ok" and x[1].isdigit():
                    times[(m.group(1), m.group(2), m.group(3), x[1])].append(float(x[3]))
    spread = {k: (max(v) - min(v)) / statistics.median(v)
              for k, v in times.items() if len(v) > 1 and statistics.median(v) > 0}
    by_device = collections.defaultdict(list)
    for k, v in spread.items():
        by_device[k[1]].append(v)
    typical = {t: statistics.median(v) for t, v in by_device.items()}
    worst = {}
    for k, v in spread.items():
        if v > factor * typical[k[1]] and v > min_pct / 100:
            worst[k[0]] = max(worst.get(k[0], 0.0), v)
    for cnn in sorted(worst):
        print("%s %.1f" % (cnn, 100 * worst[cnn]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
