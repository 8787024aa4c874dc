#!/usr/bin/python3
"""Export a torchvision classification model to ONNX, without weights.

The export keeps every layer that costs time in training: the model is put in
training mode and exported with torch.onnx.TrainingMode.TRAINING and no
constant folding, so batch norm stays a BatchNormalization node (not folded
into the conv), dropout stays a Dropout node and auxiliary classifiers
(googlenet, inception_v3 as torchvision builds them by default) stay in the
graph as extra outputs, since they run in every training step. The batch
dimension is symbolic ("batch"); the spatial size is the model's own
(inception_v3: 299, the rest 224) unless --input-size says otherwise.

Initializers keep their name, dims and data type but lose their data, so an
export is tens of KB instead of hundreds of MB. metadata_props record the
model name, the input size, the export mode and any layers the mode misses.

Export modes, tried in order until one works:
  training       TrainingMode.TRAINING, ONNX operators only.
  training+aten  the same, with ops ONNX cannot express kept as
                 org.pytorch.aten nodes (googlenet's auxiliary heads use
                 adaptive_avg_pool2d from 14x14 to 4x4, which no ONNX pooling
                 op can express); the importer understands the pooling ones.
  eval           TrainingMode.EVAL: dropout and auxiliary heads are missing;
                 the script prints which layers.

torchvision's stochastic depth (efficientnet, convnext) draws its mask with
the in-place bernoulli_, which the exporter cannot express; during export it
is replaced by the out-of-place torch.bernoulli with the same probability
and the same per-sample mask shape, so the layer stays in the graph.

Exit status: 0 exported, 2 unknown model name or bad arguments, 1 the export
failed in every mode.
"""
import argparse
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


def default_input_size(name):
    return DEFAULT_SIZES.get(name, 224)


def build_model(name):
    """The model as torchvision builds it by default (no weights), seeded."""
    torch, torchvision = import_torch()
    if name not in model_names():
        die(2, "unknown torchvision model '%s'; run '%s --list' for the names"
            % (name, os.path.basename(sys.argv[0])))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = torchvision.models.get_model_builder(name)()
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
    import torch
    with torch.no_grad():
        y = model(x)
    if isinstance(y, torch.Tensor):
        return 1
    return len([t for t in y if isinstance(t, torch.Tensor)])


def output_names(n):
    names = ["output"]
    names += ["aux%d" % i for i in range(1, n)]
    return names


def strip_weights(proto):
    """Keep each initializer's name, dims and data type; drop its data."""
    for init in proto.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                      "uint64_data", "string_data"):
            init.ClearField(field)


def _param_owners(model):
    """Module qualified name -> parameter names it owns directly."""
    owners = {}
    for mname, mod in model.named_modules():
        for pname, _ in mod.named_parameters(recurse=False):
            owners.setdefault(mname, []).append((mname + "." + pname) if mname else pname)
    return owners


def missing_layers(model, proto, mode):
    """Layers the exported graph lacks: modules whose parameters are absent
    (e.g. auxiliary heads in eval mode) and dropout layers in eval mode."""
    import torch
    present = {i.name for i in proto.graph.initializer}
    missing = []
    for mname, pnames in _param_owners(model).items():
        if not any(p in present for p in pnames):
            missing.append(mname)
    if mode == "eval":
        for mname, mod in model.named_modules():
            if isinstance(mod, torch.nn.modules.dropout._DropoutNd) and mod.p > 0:
                missing.append(mname)
    # Report the outermost missing modules only.
    missing = sorted(set(missing))
    outer = [m for m in missing if not any(m.startswith(o + ".") for o in missing if o != m)]
    return outer


def export(name, input_size=None, opset=DEFAULT_OPSET, keep_weights=False, model=None):
    """Returns (onnx ModelProto, info dict). `model` may be passed in when the
    caller built it already (it is put in training mode)."""
    torch, torchvision = import_torch()
    import onnx
    size = input_size or default_input_size(name)
    if model is None:
        model = build_model(name)
    x = torch.randn(EXAMPLE_BATCH, 3, size, size)
    modes = [
        ("training", torch.onnx.TrainingMode.TRAINING, torch.onnx.OperatorExportTypes.ONNX),
        ("training+aten", torch.onnx.TrainingMode.TRAINING,
         torch.onnx.OperatorExportTypes.ONNX_ATEN_FALLBACK),
        ("eval", torch.onnx.TrainingMode.EVAL, torch.onnx.OperatorExportTypes.ONNX),
    ]
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
                torch.onnx.export(model, x, buf, training=training, do_constant_folding=False,
                                  opset_version=opset, input_names=["input"],
                                  output_names=outs, dynamic_axes=axes,
                                  operator_export_type=op_type)
        except Exception as e:  # the exporter raises many types
            failures.append("%s: %s" % (mode, str(e).split("\n")[0][:300]))
            continue
        proto = onnx.load_from_string(buf.getvalue())
        aten = sorted({n.op_type for n in proto.graph.node if n.domain == "org.pytorch.aten"})
        if mode == "training+aten" and not aten:
            mode = "training"
        missing = missing_layers(model, proto, mode)
        if not keep_weights:
            strip_weights(proto)
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
            "traincast.model": "torchvision:" + name,
            "traincast.input_size": str(size),
            "traincast.export_mode": mode,
            "traincast.weights": "kept" if keep_weights else "stripped",
            "traincast.missing": ",".join(missing),
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
        description="Export a torchvision classification model to ONNX without weights, in "
                    "training mode, with a symbolic batch dimension.")
    ap.add_argument("model", nargs="?", help="torchvision model name, e.g. resnet50")
    ap.add_argument("-o", "--output", help="output file (default: MODEL.onnx)")
    ap.add_argument("--input-size", type=int, default=0,
                    help="spatial size in pixels (default: the model's own, inception_v3 299, "
                         "others 224)")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset (default 17)")
    ap.add_argument("--keep-weights", action="store_true", help="keep initializer data")
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
    out = args.output or args.model + ".onnx"
    proto, info = export(args.model, args.input_size or None, args.opset, args.keep_weights)
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
