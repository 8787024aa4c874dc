"""The host-phase canary on PyTorch's side (agent/bench/canary.h): ten
96x96x96 products through torch.mm, the framework's sgemm_ as the agent's own
canary calls it, small enough to stay in the core's caches. The trace runner
reads it around every iteration (docs/trace-protocol.md); the faithfulness
benches around every timing (bench/faithfulness.py, Canary)."""

import time

N = 96
CALLS = 10


def reader(torch):
    """A function that takes one reading, in ms, on the calling thread's
    torch settings."""
    a, b, c = torch.rand(N, N), torch.rand(N, N), torch.empty(N, N)

    def read():
        t = time.perf_counter()
        for _ in range(CALLS):
            torch.mm(a, b, out=c)
        return (time.perf_counter() - t) * 1000.0
    return read
