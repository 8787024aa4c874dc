#!/usr/bin/env python3
"""The convs and matmuls deploy/gpu-check.sh times on a GPU
(bench/gpu_conv_check.py's CONVS and MATMULS, written out by hand) are
layers of the models they are named after: every conv is a conv of such a
model in tests/data/cnn_set.convs (PyTorch's own hooks), every matmul a
config of the model's plan as `agent model describe` reads the committed
export at 224 px, with PyTorch kept out (TRAINCAST_PYTHON names no
interpreter), as on a bare GPU node. And its step sums (step_sums) count
what a training step runs: with every benchmark at 1 ms, the matmul sum of
a model is the number of matrix products PyTorch's profiler recorded in its
step (tests/data/gemms.txt), and a benchmark missing from the agent's lines
is counted as missing.

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


def profiled_calls(name):
    with open(os.path.join(repo, "tests", "data", "gemms.txt")) as f:
        for line in f:
            t = line.split()
            if t[:2] == ["step", name]:
                return int(t[2])
    return None


def check_step_sums(agent, env, tmp):
    for name in ("vit_b_16", "convnext_tiny", "resnet18"):
        out = subprocess.run([agent, "model", "describe", "torchvision:" + name, "--batch", "2",
                              "--format", "json"], capture_output=True, text=True, env=env,
                             timeout=120)
        d = json.loads(out.stdout)
        jsonl = os.path.join(tmp, name + ".jsonl")
        with open(jsonl, "w") as f:
            for u in d["convs"]:
                c = dict(u["config"])
                for direction in gpu_conv_check.DIRS:
                    f.write(json.dumps(dict(c, op="conv", direction=direction, median_ms=1.0)) +
                            "\n")
            for u in d["matmuls"]:
                for direction in gpu_conv_check.DIRS:
                    f.write(json.dumps(dict(u["config"], op="matmul", direction=direction,
                                            median_ms=1.0)) + "\n")
        conv, conv_missing, mm, mm_missing = gpu_conv_check.step_sums(d, jsonl)
        want_conv = sum(u["multiplicity"] * (2 if u["first_layer"] else 3) for u in d["convs"])
        check(conv == want_conv and conv_missing == 0,
              "%s: conv sum %g of %d conv directions" % (name, conv, want_conv))
        calls = profiled_calls(name)
        check(mm == calls and mm_missing == 0,
              "%s: matmul sum %g at 1 ms each, PyTorch's step runs %s products" % (name, mm, calls))
        # The agent's lines without the first matmul's forward: counted as missing.
        with open(jsonl) as f:
            lines = f.readlines()
        first = json.dumps(dict(d["matmuls"][0]["config"], op="matmul", direction="fwd",
                                median_ms=1.0)) + "\n"
        with open(jsonl, "w") as f:
            f.writelines(x for x in lines if x != first)
        _, _, mm2, missing2 = gpu_conv_check.step_sums(d, jsonl)
        check(missing2 == 1 and mm2 == mm - d["matmuls"][0]["multiplicity"],
              "%s: a matmul the agent has no line for is missing, not summed" % name)
        # A product whose A needs no gradient (a Linear on the input data) runs no bwd_data.
        with open(jsonl, "w") as f:
            f.writelines(lines)
        d["matmuls"][0]["grad_a"] = False
        _, _, mm3, missing3 = gpu_conv_check.step_sums(d, jsonl)
        check(missing3 == 0 and mm3 == mm - d["matmuls"][0]["multiplicity"],
              "%s: without A's gradient, one direction less" % name)


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
        check_step_sums(agent, env, cache)
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
