#!/usr/bin/python3
"""Regenerate tests/data/forms: ONNX files in the other forms users export,
each next to a model the importer already reads in the usual form, so the C
tests (tests/unit/common/onnx/test_model_forms.c) can compare the two.

    /usr/bin/python3 tests/data/forms/make_forms.py

Needs PyTorch and torchvision only; the ONNX files are rewritten at the
protobuf wire level, so the onnx package is not needed (when it is
installed, its checker and its external-data loader check the results).

  resnet18_params_as_inputs.onnx
      torch.onnx.export(..., export_params=False) of resnet18 exported as
      agent/harness/export_onnx.py does (training mode, no constant folding,
      opset 17, input "input" with a symbolic batch): every parameter and
      buffer is a graph input with a static shape and there is no
      initializer. Compared with tests/data/resnet18.onnx.
  resnet18_eval_params_as_inputs.onnx
      the same with torch.onnx.export's defaults (eval mode, constant
      folding): batch norm is folded into the convs, whose weights become
      inputs named "onnx::Conv_NNN". What a user gets without the harness.
  small_cnn.onnx
      a small CNN (conv, batch norm, max pool, a reshape computed from the
      input's shape, linear) in the harness's form: initializers keep name,
      dims and type but no data.
  small_cnn_external.onnx, small_cnn_external.data
      the same export with its weights, every tensor moved to the external
      file small_cnn_external.data as onnx's converter does with
      size_threshold=0 (data_location EXTERNAL, external_data location,
      offset, length). The exporter's int64 Constant nodes (the Gather index
      and Unsqueeze axes of the reshape) are first turned into initializers,
      as graph optimizers and other exporters write them, so the importer
      must read their values from the external file.
  not_onnx.pt
      torch.save of a one-element state dict (a zip archive): the file users
      pass by mistake most often, which must get "not an ONNX file". (The
      legacy pickle format is not kept: its bytes differ from run to run.)
"""
import io
import os
import struct
import sys
import warnings

OUT = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(OUT, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "agent", "harness"))

OPSET = 17
EXTERNAL_DATA = "small_cnn_external.data"

# TensorProto fields (onnx.proto)
T_DIMS, T_DATA_TYPE, T_FLOAT_DATA, T_INT64_DATA, T_NAME, T_RAW_DATA = 1, 2, 4, 7, 8, 9
T_EXTERNAL_DATA, T_DATA_LOCATION = 13, 14
FLOAT, INT64 = 1, 7
EXTERNAL = 1


# ---- protobuf wire format ----

def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(b, i):
    shift = n = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """[(number, wire type, value)]: an int for varints, bytes otherwise."""
    out, i = [], 0
    while i < len(b):
        key, i = _read_varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 2:
            n, i = _read_varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        out.append((num, wire, v))
    return out


def encode(fs):
    out = bytearray()
    for num, wire, v in fs:
        out += _varint(num << 3 | wire)
        if wire == 0:
            out += _varint(v)
        elif wire == 2:
            out += _varint(len(v)) + v
        else:
            out += v
    return bytes(out)


def first(fs, num, default=None):
    return next((v for n, _, v in fs if n == num), default)


# ---- tensors ----

def tensor_bytes(t):
    """The little-endian data of a TensorProto (raw or typed)."""
    raw = first(t, T_RAW_DATA)
    if raw is not None:
        return bytes(raw)
    dtype = first(t, T_DATA_TYPE, 0)
    if dtype == FLOAT:
        return b"".join(v if w == 5 else bytes(v) for n, w, v in t if n == T_FLOAT_DATA)
    if dtype == INT64:
        vals = []
        for n, w, v in t:
            if n != T_INT64_DATA:
                continue
            if w == 0:
                vals.append(v)
            else:
                i = 0
                while i < len(v):
                    x, i = _read_varint(v, i)
                    vals.append(x)
        return b"".join(struct.pack("<Q", x & ((1 << 64) - 1)) for x in vals)
    raise ValueError("tensor of type %d without raw data" % dtype)


def strip_data(t):
    """Name, dims and type only, as the harness writes weights."""
    return [f for f in t if f[0] not in (T_RAW_DATA, T_FLOAT_DATA, T_INT64_DATA)]


def to_external(t, data_file):
    data = tensor_bytes(t)
    offset = data_file.tell()
    data_file.write(data)
    entries = [("location", EXTERNAL_DATA), ("offset", str(offset)), ("length", str(len(data)))]
    fs = [f for f in strip_data(t) if f[0] in (T_DIMS, T_DATA_TYPE, T_NAME)]
    fs += [(T_EXTERNAL_DATA, 2, encode([(1, 2, k.encode()), (2, 2, v.encode())]))
           for k, v in entries]
    fs.append((T_DATA_LOCATION, 0, EXTERNAL))
    return encode(fs)


# ---- graphs ----

G_NODE, G_INITIALIZER = 1, 5
N_OUTPUT, N_OP_TYPE, N_ATTRIBUTE = 2, 4, 5
A_NAME, A_T = 1, 5
M_GRAPH = 7


def rewrite_graph(model_bytes, graph_fn):
    m = fields(model_bytes)
    return encode([(n, w, encode(graph_fn(fields(v))) if n == M_GRAPH else v) for n, w, v in m])


def constants_to_initializers(g):
    """Constant nodes with an int64 tensor value become initializers named
    after the node's output."""
    out, inits = [], []
    for n, w, v in g:
        if n == G_NODE:
            node = fields(v)
            attrs = [fields(a) for k, _, a in node if k == N_ATTRIBUTE]
            value = [a for a in attrs if first(a, A_NAME) == b"value"]
            if first(node, N_OP_TYPE) == b"Constant" and len(attrs) == 1 and value:
                t = fields(first(value[0], A_T))
                if first(t, T_DATA_TYPE) == INT64:
                    t = [f for f in t if f[0] != T_NAME]
                    t.append((T_NAME, 2, first(node, N_OUTPUT)))
                    t.sort(key=lambda f: f[0])
                    inits.append((G_INITIALIZER, 2, encode(t)))
                    continue
        out.append((n, w, v))
    # Initializers after the nodes, before the graph's inputs and outputs.
    at = max(i for i, f in enumerate(out) if f[0] in (G_NODE, G_INITIALIZER)) + 1
    return out[:at] + inits + out[at:]


# ---- exports ----

def torch_export(model, x, **kw):
    import torch
    args = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                opset_version=OPSET, input_names=["input"], output_names=["output"],
                dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    args.update(kw)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, buf, **args)
    return buf.getvalue()


def small_cnn():
    import torch

    class SmallCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.bn2 = torch.nn.BatchNorm2d(16)
            self.fc = torch.nn.Linear(16 * 8 * 8, 10)

        def forward(self, x):
            x = torch.relu(self.bn1(self.conv1(x)))
            x = torch.nn.functional.max_pool2d(x, 2)
            x = torch.relu(self.bn2(self.conv2(x)))
            return self.fc(x.reshape(x.shape[0], -1))

    torch.manual_seed(0)
    return SmallCNN().train()


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    print("wrote %s (%d bytes)" % (name, len(data)))


def check_with_onnx():
    try:
        import onnx
        import onnx.checker
        import onnx.numpy_helper
    except ImportError:
        print("onnx is not installed: the files were not checked with it")
        return
    # small_cnn.onnx has weights without data, which the checker refuses.
    for name in ("resnet18_params_as_inputs.onnx", "resnet18_eval_params_as_inputs.onnx",
                 "small_cnn_external.onnx"):
        onnx.checker.check_model(os.path.join(OUT, name))
    m = onnx.load(os.path.join(OUT, "small_cnn_external.onnx"))  # reads the external data
    ints = {t.name: list(onnx.numpy_helper.to_array(t).reshape(-1))
            for t in m.graph.initializer if t.data_type == INT64}
    print("onnx checked the files; int64 initializers read back: %s" % ints)


def main():
    import torch
    import export_onnx
    x = torch.randn(export_onnx.EXAMPLE_BATCH, 3, 224, 224)
    r18 = export_onnx.build_model("resnet18", init_weights=False).train()
    write("resnet18_params_as_inputs.onnx", torch_export(r18, x, export_params=False))
    # torch.onnx.export's defaults, as a user would call it.
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(r18.eval(), x, buf, export_params=False)
    write("resnet18_eval_params_as_inputs.onnx", buf.getvalue())

    cnn = small_cnn()
    full = torch_export(cnn, torch.randn(2, 3, 32, 32))

    def stripped(g):
        return [(n, w, encode(strip_data(fields(v))) if n == G_INITIALIZER else v)
                for n, w, v in g]
    write("small_cnn.onnx", rewrite_graph(full, stripped))

    data = io.BytesIO()

    def external(g):
        g = constants_to_initializers(g)
        return [(n, w, to_external(fields(v), data) if n == G_INITIALIZER else v)
                for n, w, v in g]
    write("small_cnn_external.onnx", rewrite_graph(full, external))
    write(EXTERNAL_DATA, data.getvalue())

    buf = io.BytesIO()
    torch.save({"w": torch.zeros(1)}, buf)
    write("not_onnx.pt", buf.getvalue())
    check_with_onnx()
    return 0


if __name__ == "__main__":
    sys.exit(main())
