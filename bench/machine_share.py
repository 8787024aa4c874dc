"""How much of the machine other processes used while a benchmark ran.

The load average counts the benchmark's own threads too; this subtracts
them: (CPU time of all processes, from /proc/stat) minus (the CPU time of
this process and its finished children), over (wall time x CPUs).
"""

import os
import time


def _busy_seconds():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Share:
    def __init__(self):
        self.t0, self.busy0, self.own0 = time.time(), _busy_seconds(), _own_seconds()

    def others(self):
        """Fraction of the machine (0..1) other processes used since start."""
        wall = max(time.time() - self.t0, 1e-9)
        other = (_busy_seconds() - self.busy0) - (_own_seconds() - self.own0)
        return max(0.0, other / (wall * (os.cpu_count() or 1)))
