#!/usr/bin/python3
"""Write the fuzz target's seed corpus (tests/fuzz/corpus): small ONNX graphs
that together use every op family the importer infers, with value_info from
onnx.shape_inference so the cross-check path runs too.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import os
import onnx
from onnx import TensorProto, helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def weight(name, dims):
    """A float initializer with dims and no data, as the exports have."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    return t


def ints(name, vals):
    return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)


def external(t, location, offset, length):
    """Move a tensor's data to an external file, as onnx's converter does
    (the file itself is not written: the fuzz target reads bytes)."""
    t.ClearField("raw_data")
    t.ClearField("int64_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        e = t.external_data.add()
        e.key, e.value = k, str(v)
    return t


def model(name, nodes, inits, c, h, w, outputs, opset=17, aten=False, params=()):
    """params: (name, dims) of parameters given as graph inputs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", c, h, w])
    ins = [x] + [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in params]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    g = helper.make_graph(nodes, name, ins, outs, initializer=inits)
    imports = [helper.make_opsetid("", opset)]
    if aten:
        imports.append(helper.make_opsetid("org.pytorch.aten", 1))
    m = helper.make_model(g, opset_imports=imports)
    try:
        m = onnx.shape_inference.infer_shapes(m)
    except Exception:
        pass
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    N = helper.make_node
    model("conv_bn_pool_gemm", [
        N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2], group=1),
        N("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n", "rm", "rv"], training_mode=1),
        N("Relu", ["n"], ["r"]),
        N("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        N("GlobalAveragePool", ["p"], ["g"]),
        N("Flatten", ["g"], ["f"], axis=1),
        N("Gemm", ["f", "fw", "fb"], ["y"], transB=1),
    ], [weight("w", [8, 3, 3, 3]), weight("b", [8]), weight("s", [8]), weight("bb", [8]),
        weight("m", [8]), weight("v", [8]), weight("fw", [10, 8]), weight("fb", [10])],
        3, 16, 16, ["y"])
    model("shape_arith", [
        N("Shape", ["x"], ["s"]),
        N("Constant", [], ["i0"], value=ints("i0v", [0])),
        N("Constant", [], ["i1"], value=ints("i1v", [1])),
        N("Constant", [], ["two"], value=ints("tv", [2])),
        N("Gather", ["s", "i0"], ["b"], axis=0),
        N("Gather", ["s", "i1"], ["c"], axis=0),
        N("Div", ["c", "two"], ["cg"]),
        N("Cast", ["cg"], ["cgc"], to=TensorProto.INT64),
        N("Constant", [], ["hw"], value=ints("hwv", [6, 6])),
        N("Concat", ["b", "two", "cgc", "hw"], ["t5"], axis=0),
        N("Reshape", ["x", "t5"], ["x5"]),
        N("Transpose", ["x5"], ["x5t"], perm=[0, 2, 1, 3, 4]),
        N("Constant", [], ["m1"], value=ints("m1v", [-1])),
        N("Concat", ["b", "m1"], ["t2"], axis=0),
        N("Reshape", ["x5t", "t2"], ["y"]),
    ], [], 4, 6, 6, ["y"])
    model("split_slice_pad", [
        N("Split", ["x", "sz"], ["a", "b"], axis=1),
        N("Slice", ["b", "st", "en", "ax"], ["sl"]),
        N("Concat", ["a", "sl"], ["cat"], axis=1),
        N("Pad", ["cat", "pads"], ["pd"]),
        N("AveragePool", ["pd"], ["y"], kernel_shape=[3, 3], count_include_pad=1),
        N("Identity", ["y"], ["yi"]),
    ], [ints("sz", [2, 4]), ints("st", [1]), ints("en", [1 << 62]), ints("ax", [1]),
        ints("pads", [0, 0, 1, 1, 0, 0, 1, 1])], 6, 8, 8, ["yi"])
    model("channels_last", [
        N("Transpose", ["x"], ["xh"], perm=[0, 2, 3, 1]),
        N("LayerNormalization", ["xh", "lw", "lb"], ["xn"], axis=-1),
        N("Transpose", ["fw"], ["fwt"], perm=[1, 0]),
        N("MatMul", ["xn", "fwt"], ["xm"]),
        N("Add", ["xm", "fb"], ["xa"]),
        N("Erf", ["xa"], ["xe"]),
        N("Mul", ["xe", "xa"], ["xg"]),
        N("Softmax", ["xg"], ["sm"], axis=-1),
        N("ReduceMean", ["sm"], ["y"], axes=[1, 2], keepdims=0),
    ], [weight("lw", [8]), weight("lb", [8]), weight("fw", [16, 8]), weight("fb", [16])],
        8, 4, 4, ["y"])
    model("stochastic_depth", [
        N("Shape", ["x"], ["s"]),
        N("Constant", [], ["i0"], value=ints("i0v", [0])),
        N("Gather", ["s", "i0"], ["b"], axis=0),
        N("Constant", [], ["ones"], value=ints("ov", [1, 1, 1])),
        N("Concat", ["b", "ones"], ["size"], axis=0),
        N("ConstantOfShape", ["size"], ["f"],
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
        N("RandomUniformLike", ["f"], ["u"]),
        N("Less", ["u", "f"], ["keep"]),
        N("Cast", ["keep"], ["mask"], to=TensorProto.FLOAT),
        N("Mul", ["x", "mask"], ["xm"]),
        N("Clip", ["xm", "", ""], ["c"]),
        N("HardSwish", ["c"], ["hs"]),
        N("HardSigmoid", ["hs"], ["hg"]),
        N("Dropout", ["hg"], ["y", "dm"]),
    ], [], 4, 3, 3, ["y"])
    aten = N("adaptive_avg_pool2d", ["x", "osz"], ["y"], domain="org.pytorch.aten")
    model("aten_pool", [
        N("Constant", [], ["osz"], value=ints("osv", [4, 4])),
        aten,
    ], [], 8, 14, 14, ["y"], aten=True)
    # torch.onnx.export(..., export_params=False): parameters as graph inputs.
    model("params_as_inputs", [
        N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        N("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n", "rm", "rv"], training_mode=1),
        N("Relu", ["n"], ["y"]),
    ], [], 3, 8, 8, ["y"], params=[("w", [4, 3, 3, 3]), ("b", [4]), ("s", [4]), ("bb", [4]),
                                   ("m", [4]), ("v", [4])])
    # Tensors in an external data file.
    model("external_data", [
        N("Conv", ["x", "w"], ["c"]),
        N("Reshape", ["c", "shape"], ["y"]),
    ], [external(weight("w", [4, 3, 3, 3]), "m.data", 0, 432),
        external(ints("shape", [0, -1]), "m.data", 432, 16)], 3, 8, 8, ["y"])


if __name__ == "__main__":
    main()
