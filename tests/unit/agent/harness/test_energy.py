#!/usr/bin/env python3
"""agent/harness/energy.py: RAPL package counters read from a powercap tree
(a fake one here, so the test runs on any machine), wrap-around, and the
reason given when there is no counter. NVML needs a GPU: tests/gpu."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
harness = os.path.join(here, "..", "..", "..", "..", "agent", "harness")
sys.path.insert(0, harness)
import energy  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
    else:
        print("ok: " + what)


def domain(root, name, uj, rng=262143328850):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "energy_uj"), "w") as f:
        f.write("%d\n" % uj)
    with open(os.path.join(d, "max_energy_range_uj"), "w") as f:
        f.write("%d\n" % rng)


with tempfile.TemporaryDirectory() as root:
    m = energy.Rapl(root)
    check(m.source == "" and "no RAPL package domain" in m.why and m.joules() is None,
          "an empty powercap tree: no source, a reason, no reading")

    # Two sockets and a subzone (intel-rapl:0:0, the cores) that must not
    # be counted twice.
    domain(root, "intel-rapl:0", 1000000)
    domain(root, "intel-rapl:1", 5000000)
    domain(root, "intel-rapl:0:0", 999999999)
    m = energy.Rapl(root)
    check(m.source == "rapl" and len(m.domains) == 2, "package domains only, subzones left out")
    before = m.joules()
    domain(root, "intel-rapl:0", 3000000)            # +2 J
    domain(root, "intel-rapl:1", 6500000)            # +1.5 J
    after = m.joules()
    check(abs(energy.per_step(before, after, 7) - 3.5 / 7) < 1e-12, "joules per step summed over sockets")

    # The counter wraps at max_energy_range_uj.
    domain(root, "intel-rapl:0", 999000, rng=1000000)
    m = energy.Rapl(root)
    before = m.joules()
    domain(root, "intel-rapl:0", 500, rng=1000000)    # 1000 + 500 uJ across the wrap
    after = m.joules()
    check(abs((after - before) - (0.0015 + 0.0)) < 1e-12, "a wrapped counter still counts forward")

    check(energy.per_step(None, 3.0, 2) is None and energy.per_step(1.0, 3.0, 0) is None,
          "no per-step energy from a missing reading or no steps")

    if os.geteuid() != 0:
        os.chmod(os.path.join(root, "intel-rapl:1", "energy_uj"), 0)
        m = energy.Rapl(root)
        check(m.source == "" and "not readable" in m.why, "an unreadable counter is named")

    out = subprocess.run([sys.executable, os.path.join(harness, "energy.py"), "--probe",
                          "--powercap", os.path.join(root, "nowhere")],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    check(d["type"] == "energy" and d["source"] == "" and d["why"] and d["joules"] is None,
          "--probe says why there is no counter")

# NVML without a GPU: no source and why.
n = energy.NvmlEnergy(None)
check(n.source == "" and "NVML" in n.why and n.joules() is None, "no NVML: no source, a reason")

sys.exit(1 if failures else 0)
