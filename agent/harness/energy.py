#!/usr/bin/env python3
"""Energy a training step uses, where the machine can say.

  meter(cuda, nvml)   an energy counter for the device a trace runs on:
                      on a GPU the board's total energy through NVML
                      (nvmlDeviceGetTotalEnergyConsumption, Volta and later),
                      on the CPU the RAPL package counters the kernel exposes
                      under /sys/class/powercap (intel-rapl:N, summed over
                      sockets). Its .source is "nvml" or "rapl", or "" with
                      .why saying what is missing: nothing is guessed.

A meter reads joules since some origin (.joules(), None when a read fails);
the runner reads it before the first measured iteration and after the last
and reports the difference per step. RAPL counts the whole package: other
work on the machine meanwhile is counted too, as a wall meter would.

As a program (tests, and to see what a machine offers):
  energy.py --probe [--powercap DIR]
      one JSON line {"type": "energy", "source": S, "why": W, "joules": J}.
The powercap root can be moved with TRAINCAST_POWERCAP_DIR (tests).
"""
import ctypes
import glob
import json
import os
import sys

POWERCAP = "/sys/class/powercap"


class Rapl:
    """The package domains of RAPL (intel-rapl:N, not their subzones)."""

    def __init__(self, root=None):
        self.root = root or os.environ.get("TRAINCAST_POWERCAP_DIR") or POWERCAP
        self.source = ""
        self.why = ""
        self.domains = []       # (energy_uj path, max_energy_range_uj)
        self.last = []          # last raw reading per domain
        self.total_uj = 0       # accumulated across wrap-arounds
        paths = sorted(p for p in glob.glob(os.path.join(self.root, "intel-rapl:*"))
                       if os.path.basename(p).count(":") == 1)
        if not paths:
            self.why = "no RAPL package domain under %s (the kernel or the VM exposes none)" % self.root
            return
        for p in paths:
            energy = os.path.join(p, "energy_uj")
            try:
                with open(os.path.join(p, "max_energy_range_uj")) as f:
                    rng = int(f.read().strip())
                with open(energy) as f:
                    int(f.read().strip())
            except PermissionError:
                self.why = "%s is not readable by this user (root only since Linux 5.10)" % energy
                return
            except (OSError, ValueError) as e:
                self.why = "%s cannot be read: %s" % (energy, e)
                return
            self.domains.append((energy, rng))
        self.last = [self._raw(e) for e, _ in self.domains]
        if any(v is None for v in self.last):
            self.why = "a RAPL counter under %s could not be read" % self.root
            self.domains = []
            return
        self.source = "rapl"

    @staticmethod
    def _raw(path):
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def joules(self):
        if not self.source:
            return None
        for i, (path, rng) in enumerate(self.domains):
            v = self._raw(path)
            if v is None:
                return None
            d = v - self.last[i]
            if d < 0:               # the counter wrapped at max_energy_range_uj
                d += rng
            self.total_uj += d
            self.last[i] = v
        return self.total_uj / 1e6


class NvmlEnergy:
    """The board's energy counter (millijoules since the driver loaded)."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.source = ""
        self.why = ""
        if nvml is None or nvml.dev is None:
            self.why = "NVML is not available (libnvidia-ml.so.1 not loaded or no device handle)"
            return
        if self._mj() is None:
            self.why = ("nvmlDeviceGetTotalEnergyConsumption is not supported on this GPU "
                        "(it needs Volta or later)")
            return
        self.source = "nvml"

    def _mj(self):
        fn = getattr(self.nvml.lib, "nvmlDeviceGetTotalEnergyConsumption", None)
        if fn is None:
            return None
        v = ctypes.c_ulonglong(0)
        return v.value if fn(self.nvml.dev, ctypes.byref(v)) == 0 else None

    def joules(self):
        mj = self._mj() if self.source else None
        return None if mj is None else mj / 1000.0


def meter(cuda, nvml=None):
    return NvmlEnergy(nvml) if cuda else Rapl()


def per_step(before, after, steps):
    """Joules per step between two readings, or None."""
    if before is None or after is None or steps <= 0 or after < before:
        return None
    return (after - before) / steps


def main(argv):
    root = None
    if "--powercap" in argv:
        root = argv[argv.index("--powercap") + 1]
    if "--probe" not in argv:
        print("usage: energy.py --probe [--powercap DIR]", file=sys.stderr)
        return 2
    m = Rapl(root)
    print(json.dumps({"type": "energy", "source": m.source, "why": m.why, "joules": m.joules()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
