"""A matmul config as the agent keys it, for the Python that times PyTorch's
side of one (bench/matmul_faithfulness.py on the CPU, bench/gpu_conv_check.py
on a GPU).

A config is a dict as `agent model describe --format json` lists it: sizes
per sample, m x k times k x n, `batch` products per sample, and where the
mini-batch goes (`minibatch_in`: none, the rows of one product, or more
products), with trans_a, trans_b, weight and bias flags
(common/ops/tc_matmul.h).
"""

MB_NONE, MB_ROWS, MB_BATCH = 0, 1, 2
MB_NAMES = ("none", "rows", "batch")


def gemm(c, mb):
    """(products, m, n, k) of the forward at mini-batch mb (common/ops/tc_matmul.c)."""
    count, m = c["batch"], c["m"]
    if c["minibatch_in"] == MB_ROWS:
        m *= mb
    elif c["minibatch_in"] == MB_BATCH:
        count *= mb
    return count, m, c["n"], c["k"]


def is_mm(c):
    """One product per step (torch.mm / torch.addmm), not a batch (torch.bmm)."""
    return c["batch"] == 1 and c["minibatch_in"] != MB_BATCH


def step_directions(use):
    """The directions one training step runs for a usage (a dict with
    grad_a and grad_b, as `agent model describe` lists it), in the order of
    common/ops/tc_matmul_step.h: the forward, the gradient of A where A needs
    one, of B where B does."""
    return ["fwd"] + (["bwd_data"] if use["grad_a"] else []) + (
        ["bwd_filter"] if use["grad_b"] else [])


def list_line(c, count=1, grad_a=True, grad_b=True):
    """The config as a `matmul` line of a conv list (`agent bench --convs`,
    agent/bench/convlist.h): count layers, with these operands' gradients."""
    return "matmul %s %d %d %d %d %d %d %d %d %d %d %d" % (
        MB_NAMES[c["minibatch_in"]], c["batch"], c["m"], c["n"], c["k"], c["trans_a"],
        c["trans_b"], c["weight"], c["bias"], count, grad_a, grad_b)


def bench_args(c, mb):
    """The config's arguments of `agent bench-matmul` at mini-batch mb."""
    args = ["--m", str(c["m"]), "--n", str(c["n"]), "--k", str(c["k"]), "--batch",
            str(c["batch"]), "--minibatch", str(mb), "--minibatch-in", MB_NAMES[c["minibatch_in"]]]
    return args + [f for f, on in (("--trans-a", c["trans_a"]), ("--trans-b", c["trans_b"]),
                                   ("--weight", c["weight"]), ("--bias", c["bias"])) if on]
