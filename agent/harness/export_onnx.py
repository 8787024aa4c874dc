#!/usr/bin/python3
"""Export a torchvision classification model, or one a Python file builds,
to ONNX without weights.

The export keeps every layer that costs time in training: the model is put in
training mode and exported with torch.onnx.TrainingMode.TRAINING and no
constant folding, so batch norm stays a BatchNormalization node (not folded
into the conv), dropout stays a Dropout node and auxiliary classifiers
(googlenet, inception_v3 as torchvision builds them by default) stay in the
graph as extra outputs, since they run in every training step. The batch
dimension is symbolic ("batch"); the spatial size is the model's own
(inception_v3: 299, the rest 224) unless --input-size says otherwise. Vision
transformers that fix their sequence length at construction are built for
that size (vit_*: image_size, a multiple of the patch size; maxvit_t:
input_size); a size a constructor refuses exits with status 3.

A model from a Python file is named FILE.py:FUNC: FUNC, a function of that
file, builds it (called without arguments, or with input_size=PIXELS when it
takes that parameter) and returns a torch.nn.Module whose forward maps an
(N, 3, H, W) batch to (N, classes) logits. The file is imported as a module
of its own name (its directory first on sys.path, so its neighbours
import). Its default size is 224; its traincast name is python:STEM.FUNC.

Initializers keep their name, dims and data type but lose their data, so an
export is tens of KB instead of hundreds of MB. metadata_props record the
model name, the input size, the export mode and any layers the mode misses.

Export modes, tried in order until one works:
  training       TrainingMode.TRAINING, ONNX operators only.
  training+aten  the same, with ops ONNX cannot express kept as
                 org.pytorch.aten nodes (googlenet's auxiliary heads use
                 adaptive_avg_pool2d from 14x14 to 4x4, which no ONNX pooling
                 op can express); the importer understands the pooling ones.
  eval           TrainingMode.EVAL: dropout and auxiliary heads are missing and
                 the exporter folds batch norm into the convs; the script
                 prints which layers are missing.

torchvision's stochastic depth (efficientnet, convnext) draws its mask with
the in-place bernoulli_, which the exporter cannot express; during export it
is replaced by the out-of-place torch.bernoulli with the same probability
and the same per-sample mask shape, so the layer stays in the graph.

Exit status: 0 exported, 2 unknown model name (or no such file or function)
or bad arguments, 3 the model cannot be built for that input size, 1 the
export failed in every mode (or the Python file failed to import or build).
"""
import argparse
import importlib.util
import inspect
import io
import json
import os
import sys
import time
import warnings

DEFAULT_SIZES = {"inception_v3": 299}
DEFAULT_OPSET = 17
EXAMPLE_BATCH = 2  # batch norm in training needs more than one value per channel


def die(status, msg):
    print("export_onnx: " + msg, file=sys.stderr)
    sys.exit(status)


def import_torch():
    try:
        import torch
        import torchvision
    except ImportError as e:  # pragma: no cover - depends on the host
        die(1, "PyTorch and torchvision are needed (Debian: python3-torch python3-torchvision): "
            "%s" % e)
    return torch, torchvision


def model_names():
    _, torchvision = import_torch()
    return sorted(torchvision.models.list_models(module=torchvision.models))


def python_spec(name):
    """FILE.py:FUNC -> (FILE.py, FUNC); None for a torchvision name."""
    i = name.rfind(".py:")
    return (name[:i + 3], name[i + 4:]) if i >= 0 else None


def traincast_name(name):
    """The model's name in traincast ids: torchvision:NAME or python:STEM.FUNC."""
    spec = python_spec(name)
    if not spec:
        return "torchvision:" + name
    return "python:%s.%s" % (os.path.basename(spec[0])[:-3], spec[1])


def python_builder(name):
    """The function FILE.py:FUNC names, imported; exits 2 when the file or
    the function is not there, 1 when importing the file fails."""
    path, func = python_spec(name)
    if not os.path.isfile(path):
        die(2, "model %s: no such file %s" % (name, path))
    stem = os.path.basename(path)[:-3]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        loader = importlib.util.spec_from_file_location(stem, path)
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
    except Exception as e:  # the user's code may raise anything
        die(1, "model %s: importing %s failed: %s: %s"
            % (name, path, type(e).__name__, str(e).split("\n")[0][:300]))
    finally:
        sys.path.pop(0)
    builder = getattr(module, func, None)
    if not callable(builder):
        funcs = sorted(n for n, v in vars(module).items()
                       if inspect.isfunction(v) and v.__module__ == stem and n[0] != "_")
        die(2, "model %s: %s has no function %s (its functions: %s)"
            % (name, path, func, ", ".join(funcs) or "none"))
    return builder


def default_input_size(name):
    return DEFAULT_SIZES.get(name, 224)


class _SkipInit:
    """Make torch.nn.init's in-place initializers no-ops: the export keeps
    no weights, and random init of vgg's 100M parameters costs seconds."""
    def __enter__(self):
        import torch
        self.saved = {}
        for fn in dir(torch.nn.init):
            if fn.endswith("_") and not fn.startswith("_"):
                self.saved[fn] = getattr(torch.nn.init, fn)
                setattr(torch.nn.init, fn, lambda tensor, *a, **k: tensor)
        return self

    def __exit__(self, *exc):
        import torch
        for fn, f in self.saved.items():
            setattr(torch.nn.init, fn, f)
        return False


def size_kwargs(name, size):
    """What a torchvision constructor must be told to run at `size` pixels
    (None: its default). Vision transformers fix their sequence length at
    construction: vit_* take image_size (a multiple of the patch size, 16 or
    32 or 14), maxvit_t takes input_size; the rest (the CNNs, swin_* whose
    windows pad) take any size."""
    if not size or size == default_input_size(name):
        return {}
    if name.startswith("vit_"):
        return {"image_size": size}
    if name.startswith("maxvit"):
        return {"input_size": (size, size)}
    return {}


def build_model(name, init_weights=True, input_size=None):
    """The model as torchvision builds it by default (no pretrained weights),
    seeded, for inputs of input_size pixels (None: its default). Without
    init_weights the parameters keep whatever memory they got: same
    structure, same shapes, no initialization cost."""
    torch, torchvision = import_torch()
    if python_spec(name):
        builder = python_builder(name)
        params = inspect.signature(builder).parameters
        kwargs = {"input_size": input_size or 224} if "input_size" in params else {}
    else:
        if name not in model_names():
            die(2, "unknown torchvision model '%s'; run '%s --list' for the names"
                % (name, os.path.basename(sys.argv[0])))
        builder = torchvision.models.get_model_builder(name)
        kwargs = size_kwargs(name, input_size)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if init_weights:
                model = builder(**kwargs)
            else:
                with _SkipInit():
                    model = builder(**kwargs)
        except (AssertionError, ValueError, RuntimeError) as e:
            die(3, "%s cannot build %s for %s-pixel inputs: %s"
                % ("its function" if python_spec(name) else "torchvision", name, input_size,
                   str(e).split("\n")[0][:200]))
    if not isinstance(model, torch.nn.Module):
        die(1, "model %s: the function returned %s, not a torch.nn.Module"
            % (name, type(model).__name__))
    return model


def _stochastic_depth_exportable(input, p, mode, training=True):
    """torchvision.ops.stochastic_depth with an out-of-place Bernoulli draw."""
    import torch
    if p < 0.0 or p > 1.0:
        raise ValueError("drop probability has to be between 0 and 1, but got %s" % p)
    if mode not in ("batch", "row"):
        raise ValueError("mode has to be either 'batch' or 'row', but got %s" % mode)
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    if mode == "row":
        size = [input.shape[0]] + [1] * (input.ndim - 1)
    else:
        size = [1] * input.ndim
    noise = torch.bernoulli(torch.full(size, survival_rate, dtype=input.dtype,
                                       device=input.device))
    if survival_rate > 0.0:
        noise = noise / survival_rate
    return input * noise


class _PatchedStochasticDepth:
    def __enter__(self):
        import torchvision.ops  # noqa: F401 (loads the module below)
        # torchvision.ops re-exports the function under the module's name, so
        # the module itself is only reachable through sys.modules.
        sd = sys.modules["torchvision.ops.stochastic_depth"]
        self.mod = sd
        self.orig = sd.stochastic_depth
        sd.stochastic_depth = _stochastic_depth_exportable
        return self

    def __exit__(self, *exc):
        self.mod.stochastic_depth = self.orig
        return False


def count_outputs(model, x):
    """How many tensors the model returns in its current mode (auxiliary
    heads add outputs in training). Tried on a small input first: a second
    full-size forward pass of vgg costs seconds."""
    import torch
    y = None
    if x.shape[-1] > 96:
        try:
            with torch.no_grad():
                y = model(x[..., :96, :96])
        except Exception:  # too small for this model: use the real size
            y = None
    if y is None:
        with torch.no_grad():
            y = model(x)
    if isinstance(y, torch.Tensor):
        return 1
    return len([t for t in y if isinstance(t, torch.Tensor)])


def output_names(n):
    names = ["output"]
    names += ["aux%d" % i for i in range(1, n)]
    return names


def inputs_to_initializers(proto, keep):
    """An export with export_params=False lists parameters and buffers as
    graph inputs; turn every input but `keep` into a data-free initializer
    with the same name, dims and type, and no data."""
    import onnx
    inputs = list(proto.graph.input)
    del proto.graph.input[:]
    for vi in inputs:
        if vi.name in keep:
            proto.graph.input.append(vi)
            continue
        t = onnx.TensorProto()
        t.name = vi.name
        t.data_type = vi.type.tensor_type.elem_type
        t.dims.extend(d.dim_value for d in vi.type.tensor_type.shape.dim)
        proto.graph.initializer.append(t)


def _outermost(names):
    names = sorted(set(names))
    return [m for m in names if not any(m.startswith(o + ".") for o in names if o != m)]


def missing_layers(model, proto, mode, x):
    """Layers the exported graph lacks. In the training modes: modules whose
    parameters are absent from the graph (none expected). In eval mode:
    modules that do not run in eval (auxiliary heads), dropout layers, and
    batch norm when the exporter folded it into the convs."""
    import torch
    present = {i.name for i in proto.graph.initializer}
    if mode != "eval":
        missing = []
        for mname, mod in model.named_modules():
            pnames = [(mname + "." + p) if mname else p
                      for p, _ in mod.named_parameters(recurse=False)]
            if pnames and not any(p in present for p in pnames):
                missing.append(mname)
        return _outermost(missing)
    called = set()
    hooks = [m.register_forward_hook(lambda mod, i, o, q=q: called.add(q))
             for q, m in model.named_modules() if q]
    model.eval()
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    missing = [q for q, m in model.named_modules()
               if q and q not in called and any(True for _ in m.parameters())]
    missing += [q for q, m in model.named_modules()
                if q in called and isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
    missing = _outermost(missing)
    bns = [q for q, m in model.named_modules()
           if q in called and isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns and not any(n.op_type == "BatchNormalization" for n in proto.graph.node):
        missing.append("%d batch norm layers (folded into their convs)" % len(bns))
    return missing


def export(name, input_size=None, opset=DEFAULT_OPSET, keep_weights=False, model=None,
           mode=None):
    """Returns (onnx ModelProto, info dict). `model` may be passed in when the
    caller built it already (it is put in training mode). `mode` forces one
    export mode instead of trying them in order."""
    torch, torchvision = import_torch()
    import onnx
    size = input_size or default_input_size(name)
    if model is None:
        model = build_model(name, input_size=size)
    x = torch.randn(EXAMPLE_BATCH, 3, size, size)
    modes = [
        ("training", torch.onnx.TrainingMode.TRAINING, torch.onnx.OperatorExportTypes.ONNX),
        ("training+aten", torch.onnx.TrainingMode.TRAINING,
         torch.onnx.OperatorExportTypes.ONNX_ATEN_FALLBACK),
        ("eval", torch.onnx.TrainingMode.EVAL, torch.onnx.OperatorExportTypes.ONNX),
    ]
    if mode:
        modes = [m for m in modes if m[0] == mode]
    failures = []
    t0 = time.time()
    for mode, training, op_type in modes:
        if training == torch.onnx.TrainingMode.TRAINING:
            model.train()
        else:
            model.eval()
        buf = io.BytesIO()
        try:
            with _PatchedStochasticDepth(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                n_out = count_outputs(model, x)
                outs = output_names(n_out)
                axes = {"input": {0: "batch"}}
                axes.update({o: {0: "batch"} for o in outs})
                # Without weights, parameters travel as graph inputs (no
                # hundreds of MB serialized) and become initializers below.
                torch.onnx.export(model, x, buf, training=training, do_constant_folding=False,
                                  opset_version=opset, input_names=["input"],
                                  output_names=outs, dynamic_axes=axes,
                                  operator_export_type=op_type, export_params=keep_weights)
        except Exception as e:  # the exporter raises many types
            failures.append("%s: %s" % (mode, str(e).split("\n")[0][:300]))
            continue
        proto = onnx.load_from_string(buf.getvalue())
        if not keep_weights:
            inputs_to_initializers(proto, {"input"})
        aten = sorted({n.op_type for n in proto.graph.node if n.domain == "org.pytorch.aten"})
        if mode == "training+aten" and not aten:
            mode = "training"
        missing = missing_layers(model, proto, mode, x)
        info = {
            "model": name,
            "input_size": size,
            "mode": mode,
            "opset": opset,
            "aten_ops": aten,
            "missing": missing,
            "failures": failures,
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "export_s": round(time.time() - t0, 3),
        }
        meta = {
            "traincast.model": traincast_name(name),
            "traincast.input_size": str(size),
            "traincast.export_mode": mode,
            "traincast.weights": "kept" if keep_weights else "stripped",
            "traincast.missing": ", ".join(missing),
            "traincast.torch": torch.__version__,
            "traincast.torchvision": torchvision.__version__,
        }
        del proto.metadata_props[:]
        for k, v in meta.items():
            p = proto.metadata_props.add()
            p.key, p.value = k, v
        return proto, info
    die(1, "could not export %s in any mode:\n  %s" % (name, "\n  ".join(failures)))


def write_atomic(path, data):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Export a torchvision classification model, or FILE.py:FUNC, to ONNX "
                    "without weights, in training mode, with a symbolic batch dimension.")
    ap.add_argument("model", nargs="?",
                    help="torchvision model name, e.g. resnet50, or FILE.py:FUNC (FUNC of "
                         "FILE.py builds the model)")
    ap.add_argument("-o", "--output", help="output file (default: MODEL.onnx)")
    ap.add_argument("--input-size", type=int, default=0,
                    help="spatial size in pixels (default: the model's own, inception_v3 299, "
                         "others 224)")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset (default 17)")
    ap.add_argument("--keep-weights", action="store_true",
                    help="keep (initialized) weights in the file")
    ap.add_argument("--mode", choices=["training", "training+aten", "eval"],
                    help="force one export mode (default: the first that works, in this order)")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--json", action="store_true",
                    help="print a JSON summary of the export on stdout")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(model_names()))
        return 0
    if not args.model:
        ap.print_usage(sys.stderr)
        die(2, "a model name is required (see --list)")
    if args.input_size and not 16 <= args.input_size <= 4096:
        die(2, "--input-size must be between 16 and 4096, not %d" % args.input_size)
    out = args.output or (python_spec(args.model) or (args.model,))[-1] + ".onnx"
    model = build_model(args.model, init_weights=args.keep_weights, input_size=args.input_size)
    proto, info = export(args.model, args.input_size or None, args.opset, args.keep_weights,
                         model=model, mode=args.mode)
    data = proto.SerializeToString()
    write_atomic(out, data)
    info["bytes"] = len(data)
    info["path"] = out
    msg = "exported %s@%d (%s mode, %d nodes, %d bytes) to %s" % (
        args.model, info["input_size"], info["mode"], len(proto.graph.node), len(data), out)
    print(msg, file=sys.stderr)
    if info["aten_ops"]:
        print("export_onnx: %s kept as org.pytorch.aten ops: %s"
              % (args.model, ", ".join(info["aten_ops"])), file=sys.stderr)
    if info["missing"]:
        print("export_onnx: warning: %s exported in %s mode; missing layers: %s"
              % (args.model, info["mode"], ", ".join(info["missing"])), file=sys.stderr)
    if args.json:
        print(json.dumps(info, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
