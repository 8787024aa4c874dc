#!/usr/bin/python3
"""Regenerate tests/data: weight-free ONNX exports of the CNN set and two
vision transformers, and the reference figures the C tests compare the
importer with, all computed by the framework itself.

    /usr/bin/python3 agent/harness/make_test_data.py [--out tests/data] [MODEL ...]

Writes, per model, NAME.onnx (export_onnx.py's export at the model's own
input size) and appends to reference.txt:

    model NAME INPUT_SIZE PARAMS MACS MODE OUTPUTS

  PARAMS  sum(p.numel() for p in model.parameters()) of the model as
          torchvision builds it by default (auxiliary heads included)
  MACS    forward multiply-accumulates per sample, counted independently of
          ONNX while the model runs in training mode (auxiliary heads run,
          as in training): forward hooks on every Conv2d, and every matrix
          product PyTorch's profiler records (a Linear's addmm or mm, and
          the products attention calls as functions, which no module hook
          sees)
  MODE    the export mode (training, training+aten, eval)

and to gemms.txt every matrix product one training step runs at batch 2
(the forward in training mode, then backward from the sum of the outputs),
as PyTorch's profiler records the outermost aten::mm, addmm, bmm (and any
other product op) with its operand sizes:

    step NAME CALLS               the products of the step in all
    gemm NAME OP COUNT M N K CALLS

  OP      the aten op without its namespace (mm, addmm, bmm, ...)
  COUNT   products per call (a bmm's batch; 1 for mm and addmm)
  M N K   C[M, N] = A[M, K] B[K, N], the sizes of the call's operands
  CALLS   how many calls of that op and sizes the step made

For the models in SHAPE_MODELS it also writes shapes/NAME.txt:

    torch VALUE D1,D2,...   the output shape (batch excluded) of a module as
                            PyTorch computed it when it ran the model at batch
                            2, on the ONNX value that leaves the module's scope
    onnx VALUE D1,D2,...    every other value's shape from onnx.shape_inference
                            (ONNX's reference implementation), batch excluded

Nothing here is typed in by hand: rerun the script after upgrading PyTorch or
torchvision and commit the result.
"""
import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_onnx  # noqa: E402

CNN_SET = [
    "alexnet", "vgg11", "vgg16", "vgg19", "vgg11_bn", "vgg16_bn", "resnet18", "resnet34",
    "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "densenet161", "densenet169", "densenet201", "squeezenet1_0", "squeezenet1_1",
    "inception_v3", "googlenet", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "mobilenet_v2",
    "mobilenet_v3_large", "mobilenet_v3_small", "mnasnet0_5", "mnasnet1_0", "efficientnet_b0",
    "efficientnet_b1", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny",
]

# Transformers: their matmuls, projections and attention's batched
# products, are what the step spends its time in.
TRANSFORMER_SET = ["vit_b_16", "swin_t"]

# The product ops the profiler may record, and which operands hold A and B.
GEMM_OPS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1),
            "aten::baddbmm": (1, 2), "aten::addbmm": (1, 2), "aten::mv": (0, 1),
            "aten::addmv": (1, 2), "aten::dot": (0, 1)}

SHAPE_MODELS = [
    "alexnet", "resnet50", "googlenet", "inception_v3", "shufflenet_v2_x1_0",
    "mobilenet_v3_large", "efficientnet_b0", "densenet121", "squeezenet1_1", "regnet_y_400mf",
    "convnext_tiny", "vit_b_16", "swin_t",
]


def gemm_calls(fn):
    """Every outermost matrix product PyTorch runs in fn(), from its
    profiler: a Counter of (op, count, m, n, k) -> calls. A vector operand
    counts as a matrix of one column (mv) or one row (dot)."""
    import collections
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    calls = collections.Counter()
    for e in prof.events():
        if e.name not in GEMM_OPS:
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None and not nested:
            nested = parent.name in GEMM_OPS
            parent = parent.cpu_parent
        if nested:
            continue
        ia, ib = GEMM_OPS[e.name]
        a, b = list(e.input_shapes[ia]), list(e.input_shapes[ib])
        if len(a) == 1:
            a = [1] + a
        if len(b) == 1:
            b = b + [1]
        count = a[0] if len(a) == 3 else 1
        calls[(e.name.split("::")[1], count, a[-2], b[-1], a[-1])] += 1
    return calls


def count_macs(model, x):
    """Forward MACs per sample: hooks on Conv2d, the profiler for the
    matrix products."""
    import torch
    total = [0]

    def conv_hook(mod, inp, out):
        per_out = (mod.in_channels // mod.groups) * mod.kernel_size[0] * mod.kernel_size[1]
        total[0] += out.numel() // out.shape[0] * per_out

    handles = [mod.register_forward_hook(conv_hook) for mod in model.modules()
               if isinstance(mod, torch.nn.Conv2d)]
    model.train()

    def forward():
        with torch.no_grad(), export_onnx._PatchedStochasticDepth():
            model(x)
    gemms = gemm_calls(forward)
    for h in handles:
        h.remove()
    gemm_macs = sum(count * m * n * k * calls for (_, count, m, n, k), calls in gemms.items())
    return total[0] + gemm_macs // x.shape[0]


def step_gemms(model, x):
    """The matrix products of one training step (forward in training mode,
    backward from the sum of every output)."""
    import torch
    model.train()

    def step():
        y = model(x)
        outs = [y] if isinstance(y, torch.Tensor) else [t for t in y
                                                         if isinstance(t, torch.Tensor)]
        sum(t.sum() for t in outs).backward()
    return gemm_calls(step)


def module_scopes(model):
    """Module qualified name -> the scope path torch.onnx gives its nodes:
    a child named by index is "<parent's component>.<index>", any other
    child is its attribute name ("/layer1/layer1.0/conv1")."""
    comp = {"": ""}
    scope = {"": ""}
    for q, _ in model.named_modules():
        if not q:
            continue
        parent, _, attr = q.rpartition(".")
        c = comp[parent] + "." + attr if attr.isdigit() and comp[parent] else attr
        comp[q] = c
        scope[q] = scope[parent] + "/" + c
    return scope


def torch_shapes(model, x, proto):
    """ONNX value name -> shape (batch excluded) of the module that produces
    it, as PyTorch computed it running the model."""
    import torch
    calls = {}

    def make_hook(q):
        def hook(mod, inp, out):
            if isinstance(out, torch.Tensor):
                calls.setdefault(q, []).append(list(out.shape))
            else:
                calls.setdefault(q, []).append(None)
        return hook

    handles = [m.register_forward_hook(make_hook(q)) for q, m in model.named_modules() if q]
    model.train()
    with torch.no_grad(), export_onnx._PatchedStochasticDepth():
        model(x)
    for h in handles:
        h.remove()

    nodes = list(proto.graph.node)
    graph_outputs = {o.name for o in proto.graph.output}
    consumers = {}
    for i, n in enumerate(nodes):
        for v in n.input:
            consumers.setdefault(v, []).append(i)
    scopes = module_scopes(model)
    result = {}
    unmapped = []
    for q, shapes in calls.items():
        for k, shape in enumerate(shapes):
            # The k-th call of a module is scoped "<scope>_<k>" (k >= 1).
            prefix = scopes[q] + ("_%d" % k if k else "") + "/"
            inside = {i for i, n in enumerate(nodes) if n.name.startswith(prefix)}
            exits = []
            for i in sorted(inside):
                for v in nodes[i].output:
                    if not v:
                        continue
                    outside = [c for c in consumers.get(v, []) if c not in inside]
                    if outside or v in graph_outputs:
                        exits.append(v)
            if len(exits) != 1 or shape is None:
                unmapped.append("%s#%d" % (q, k))
                continue
            if shape[0] != x.shape[0]:
                raise SystemExit("module %s: batch %d, expected %d" % (q, shape[0], x.shape[0]))
            result[exits[0]] = shape[1:]
    return result, unmapped


def onnx_shapes(proto):
    """Value name -> shape (batch excluded) from onnx.shape_inference, for
    values whose shape it resolves completely and whose first dim is the
    batch."""
    import onnx
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False,
                                                 data_prop=True)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            continue
        dims = t.shape.dim
        if not dims or dims[0].dim_param != "batch":
            continue
        if all(d.HasField("dim_value") for d in dims[1:]):
            out[vi.name] = [d.dim_value for d in dims[1:]]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data"))
    ap.add_argument("models", nargs="*", help="default: the CNN set and the transformers")
    args = ap.parse_args()
    torch, torchvision = export_onnx.import_torch()
    every = CNN_SET + TRANSFORMER_SET
    names = args.models or every
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "shapes"), exist_ok=True)
    ref_path = os.path.join(out, "reference.txt")
    gemm_path = os.path.join(out, "gemms.txt")
    lines, gemm_lines = {}, {}
    if args.models and os.path.exists(ref_path):
        for line in open(ref_path):
            if line.startswith("model "):
                lines[line.split()[1]] = line
    if args.models and os.path.exists(gemm_path):
        for line in open(gemm_path):
            if line.startswith(("step ", "gemm ")):
                gemm_lines.setdefault(line.split()[1], []).append(line)
    t_all = time.time()
    for name in names:
        t0 = time.time()
        model = export_onnx.build_model(name)
        size = export_onnx.default_input_size(name)
        t1 = time.time()
        proto, info = export_onnx.export(name, model=model)
        export_s = time.time() - t1
        data = proto.SerializeToString()
        export_onnx.write_atomic(os.path.join(out, name + ".onnx"), data)
        params = sum(p.numel() for p in model.parameters())
        x = torch.randn(export_onnx.EXAMPLE_BATCH, 3, size, size)
        macs = count_macs(model, x)
        n_out = len(proto.graph.output)
        lines[name] = "model %s %d %d %d %s %d\n" % (name, size, params, macs, info["mode"],
                                                    n_out)
        step = step_gemms(model, x)
        gemm_lines[name] = ["step %s %d\n" % (name, sum(step.values()))]
        gemm_lines[name] += ["gemm %s %s %d %d %d %d %d\n" % ((name,) + key + (calls,))
                             for key, calls in sorted(step.items())]
        extra = ""
        if name in SHAPE_MODELS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ts, unmapped = torch_shapes(model, x, proto)
                os_ = onnx_shapes(proto)
            with open(os.path.join(out, "shapes", name + ".txt"), "w") as f:
                f.write("# %s@%d: torch = module outputs as PyTorch ran them; onnx = "
                        "onnx.shape_inference (batch excluded)\n" % (name, size))
                for v in sorted(ts):
                    f.write("torch %s %s\n" % (v, ",".join(str(d) for d in ts[v])))
                for v in sorted(os_):
                    if v not in ts:
                        f.write("onnx %s %s\n" % (v, ",".join(str(d) for d in os_[v])))
            extra = ", shapes: %d torch + %d onnx (%d modules unmapped)" % (
                len(ts), len([v for v in os_ if v not in ts]), len(unmapped))
        print("%-20s %-13s %7d bytes  export %5.1fs  total %5.1fs  params %d  MACs %.3fG  "
              "step GEMMs %d%s"
              % (name, info["mode"], len(data), export_s, time.time() - t0, params, macs / 1e9,
                 sum(step.values()), extra), flush=True)
        del model
    with open(ref_path, "w") as f:
        f.write("# Generated by agent/harness/make_test_data.py with torch %s, torchvision %s.\n"
                % (torch.__version__, torchvision.__version__))
        f.write("# model NAME INPUT_SIZE PARAMS MACS MODE OUTPUTS\n")
        for name in every + sorted(n for n in lines if n not in every):
            if name in lines:
                f.write(lines[name])
    with open(gemm_path, "w") as f:
        f.write("# Generated by agent/harness/make_test_data.py with torch %s, torchvision %s.\n"
                % (torch.__version__, torchvision.__version__))
        f.write("# The matrix products of one training step at batch 2, as PyTorch's profiler "
                "records them.\n# step NAME CALLS (all of the model's)\n"
                "# gemm NAME OP COUNT M N K CALLS\n")
        for name in every + sorted(n for n in gemm_lines if n not in every):
            f.writelines(gemm_lines.get(name, []))
    print("done in %.1fs" % (time.time() - t_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
