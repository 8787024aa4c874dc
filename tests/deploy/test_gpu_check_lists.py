#!/usr/bin/env python3
"""The convs and matmuls deploy/gpu-check.sh times on a GPU
(bench/gpu_conv_check.py's CONVS and MATMULS, written out by hand) are
layers of the models they are named after: every conv is a conv of such a
model in tests/data/cnn_set.convs (PyTorch's own hooks), every matmul a
config of the model's plan as `agent model describe` reads the committed
export at 224 px, with PyTorch kept out (TRAINCAST_PYTHON names no
interpreter), as on a bare GPU node.

    test_gpu_check_lists.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.abspath(os.path.join(here, "..", ".."))
sys.path.insert(0, os.path.join(repo, "bench"))
import gpu_conv_check  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def cnn_set_convs():
    """model name -> set of (c, h, k, r, stride, pad, groups, bias, first)."""
    convs, model = {}, None
    with open(os.path.join(repo, "tests", "data", "cnn_set.convs")) as f:
        for line in f:
            t = line.split()
            if not t or t[0].startswith("#"):
                continue
            if t[0] == "model":
                model = t[1].split(":")[-1]
                continue
            c, h, w, k, r, s, ph, pw, sh, sw, dh, dw, g, _count, first, bias = map(int, t[:16])
            if h == w and r == s and ph == pw and sh == sw and dh == dw == 1:
                convs.setdefault(model, set()).add((c, h, k, r, sh, ph, g, bool(bias),
                                                    bool(first)))
    return convs


def described_matmuls(agent, name, env):
    out = subprocess.run([agent, "model", "describe", "torchvision:" + name, "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0:
        check(False, "agent model describe torchvision:%s: %s" % (name, out.stderr.strip()))
        return []
    d = json.loads(out.stdout)
    check(d["input"][1:] == [224, 224], "%s described at 224 px" % name)
    return [m["config"] for m in d["matmuls"]]


def main():
    build = sys.argv[1]
    agent = os.path.join(build, "agent", "agent")
    by_model = cnn_set_convs()
    for name, c, h, k, r, stride, pad, groups, bias, first in gpu_conv_check.CONVS:
        family = name.split()[0]
        want = (c, h, k, r, stride, pad, groups, bias, first)
        owners = [m for m, convs in by_model.items() if m.startswith(family) and want in convs]
        check(bool(owners), "conv '%s' is a conv of %s (%s)" % (name, family,
                                                              ", ".join(owners[:3]) or "none"))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRAINCAST_PYTHON=os.path.join(cache, "no-python"),
                   TRAINCAST_CACHE=cache)
        plans = {}
        for name, products, m, n, k, where, ta, tb, weight, bias in gpu_conv_check.MATMULS:
            model = name.split()[0]
            if model not in plans:
                plans[model] = described_matmuls(agent, model, env)
            want = dict(batch=products, m=m, n=n, k=k, minibatch_in=where, trans_a=ta,
                        trans_b=tb, weight=weight, bias=bias)
            found = any(all(cfg.get(f) == v for f, v in want.items()) for cfg in plans[model])
            check(found, "matmul '%s' is a config of %s's plan (%d configs)"
                  % (name, model, len(plans[model])))
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
