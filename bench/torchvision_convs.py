#!/usr/bin/python3
"""Write the conv layers of torchvision CNNs as a traincast conv list.

Builds each model as training builds it (torchvision defaults, so
GoogLeNet and Inception v3 keep their auxiliary classifiers), runs it once
in training mode on a zero input (batch 2, no weights needed: the structure
is what matters) with forward hooks on every Conv2d, records each conv's
input shape and parameters (a bias included, and nhwc where the input
arrives channels-last), and groups identical configs per model. A conv
whose input is the network input itself is marked first (no backward-data
pass). The output format is described in agent/bench/convlist.h.

usage: torchvision_convs.py OUT.convs [MODEL ...]   (default: the CNN set)
"""
import sys
from collections import OrderedDict

import torch
import torchvision

CNN_SET = [
    "alexnet", "vgg11", "vgg16", "vgg19", "vgg11_bn", "vgg16_bn", "resnet18", "resnet34",
    "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "densenet161", "densenet169", "densenet201", "squeezenet1_0", "squeezenet1_1",
    "inception_v3", "googlenet", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "mobilenet_v2",
    "mobilenet_v3_large", "mobilenet_v3_small", "mnasnet0_5", "mnasnet1_0", "efficientnet_b0",
    "efficientnet_b1", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny",
]


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def channels_last(t):
    """Whether PyTorch runs a conv on input t channels-last: t's strides
    are channels-last and not contiguous (suggest_memory_format, which
    mkldnn_conv_use_channels_last asks, for the dense tensors met here)."""
    return t.dim() == 4 and not t.is_contiguous() and \
        t.is_contiguous(memory_format=torch.channels_last)


def model_convs(name):
    kwargs = {"weights": None}
    if name in ("inception_v3", "googlenet"):
        kwargs["init_weights"] = False  # only skips the slow scipy initialisation
    model = getattr(torchvision.models, name)(**kwargs).train()
    size = 299 if name == "inception_v3" else 224
    x = torch.zeros(2, 3, size, size)
    convs = OrderedDict()

    def hook(mod, inputs, _output):
        inp = inputs[0]
        if isinstance(mod.padding, str):
            raise SystemExit(f"{name}: string padding is not supported here")
        ph, pw = pair(mod.padding)
        sh, sw = pair(mod.stride)
        dh, dw = pair(mod.dilation)
        r, s = pair(mod.kernel_size)
        key = (inp.shape[1], inp.shape[2], inp.shape[3], mod.out_channels, r, s, ph, pw, sh, sw,
               dh, dw, mod.groups, int(mod.bias is not None), channels_last(inp))
        first = inp.data_ptr() == x.data_ptr() and inp.shape == x.shape
        count, all_first = convs.get(key, (0, True))
        convs[key] = (count + 1, all_first and first)

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return convs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    names = sys.argv[2:] or CNN_SET
    torch.set_num_threads(1)
    with open(sys.argv[1], "w") as out:
        out.write("# conv layers of torchvision %s models (bench/torchvision_convs.py)\n"
                  % torchvision.__version__)
        out.write("# c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups count first "
                  "bias [layout]\n")
        inner = {}  # config -> whether any use needs backward-data
        total_layers = total_passes = 0
        for name in names:
            convs = model_convs(name)
            for key, (count, first) in convs.items():
                inner[key] = inner.get(key, False) or not first
                total_layers += count
                total_passes += count * (2 if first else 3)
            out.write(f"model torchvision:{name}\n")
            for key, (count, first) in convs.items():
                out.write(" ".join(str(v) for v in key[:-2]) + f" {count} {int(first)} {key[-2]}"
                          + (" nhwc" if key[-1] else "") + "\n")
            layers = sum(c for c, _ in convs.values())
            print(f"{name}: {layers} conv layers, {len(convs)} configs", file=sys.stderr)
    items = sum(3 if i else 2 for i in inner.values())
    print(f"total: {len(names)} models, {total_layers} conv layers, {len(inner)} distinct "
          f"configs; per batch size {total_passes} layer passes -> {items} items",
          file=sys.stderr)


if __name__ == "__main__":
    main()
