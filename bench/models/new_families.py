"""CNNs of architectural families that torchvision 0.14 does not ship.

The accuracy study's check on CNNs of families it never fitted on: every
family of torchvision's classification models is in the study's set but
MaxViT, whose maxvit_t cannot be built at the study's 112 pixels (its 7x7
partitions do not fit), so these come from their papers, written here in
plain PyTorch, as traincast reads any model from a Python file (`agent
trace --models bench/models/new_families.py:xception`; docs/model-graphs.md,
"FILE.py:FUNC specs"). Each function builds the ImageNet classifier (1000
classes, no weights) at the paper's default size; all take any input size
from 64 pixels up, since each ends in a global average pool.

Each is its own building block, none of them a size of a torchvision
family; the nearest torchvision relative is named so that a reader can
judge how new it is:

  xception        depthwise-separable convs in residual blocks that end in
                  max pools (Chollet 2017, "Xception"; nearest: Inception,
                  MobileNet)
  darknet53       3x3/1x1 residual pairs with leaky ReLU, strided convs and
                  no pooling (Redmon and Farhadi 2018, "YOLOv3"; nearest:
                  ResNet)
  vovnet39        one-shot aggregation: five 3x3 convs in a chain, all their
                  outputs concatenated once and fused by a 1x1 conv (Lee et
                  al. 2019, "An Energy and GPU-Computation Efficient Backbone
                  Network"; nearest: DenseNet)
  repvgg_a0       training-time RepVGG: every block sums a 3x3 conv, a 1x1
                  conv and an identity, each with its own batch norm (Ding et
                  al. 2021, "RepVGG"; nearest: VGG, ResNet)
  poolformer_s12  MetaFormer with average pooling as the token mixer, group
                  norm and GELU 1x1-conv MLPs with layer scale (Yu et al.
                  2022, "MetaFormer Is Actually What You Need for Vision";
                  nearest: ConvNeXt)

Written from the papers' descriptions and tables; where a paper leaves a
detail open, the authors' public implementation's choice is taken and
noted. They are for timing: the structure is the papers', the training
recipe (augmentation, schedules) is not part of a step's time.
"""
import torch
from torch import nn


def _bn_act(c, act):
    return [nn.BatchNorm2d(c), act()]


class _Classifier(nn.Module):
    """`layers`, then a global average pool and a linear classifier of their
    `width` channels: how each of these ends."""
    def __init__(self, layers, width, num_classes):
        super().__init__()
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


# ---- Xception ----------------------------------------------------------------

class _SeparableConv(nn.Sequential):
    """A depthwise 3x3 conv, then a pointwise 1x1 conv, neither with bias."""
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cin, 3, 1, 1, groups=cin, bias=False),
                         nn.Conv2d(cin, cout, 1, bias=False))


class _XceptionBlock(nn.Module):
    """`reps` (ReLU, separable conv, batch norm) units, widened in the first
    unit (grow_first) or the last, then a 3x3 max pool of stride 2 where the
    block downsamples; the shortcut is a strided 1x1 conv with batch norm
    where the shape changes, else the identity."""
    def __init__(self, cin, cout, reps, stride, start_with_relu=True, grow_first=True):
        super().__init__()
        self.skip = None
        if cin != cout or stride != 1:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))
        layers = []
        widths = [cin] + [cout] * reps if grow_first else [cin] * reps + [cout]
        for i in range(reps):
            # the first ReLU must not overwrite the shortcut's input
            layers += [nn.ReLU(inplace=i > 0), _SeparableConv(widths[i], widths[i + 1]),
                       nn.BatchNorm2d(widths[i + 1])]
        if not start_with_relu:
            layers = layers[1:]
        if stride != 1:
            layers.append(nn.MaxPool2d(3, stride, 1))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x) + (self.skip(x) if self.skip is not None else x)


class Xception(_Classifier):
    """Entry flow (two plain convs, three downsampling blocks), middle flow
    (eight 728-wide blocks of three units), exit flow, as in the paper's
    figure 5; the first two convs unpadded as in the authors' Keras code."""
    def __init__(self, num_classes=1000):
        layers = [nn.Conv2d(3, 32, 3, 2, 0, bias=False), *_bn_act(32, nn.ReLU),
                  nn.Conv2d(32, 64, 3, 1, 0, bias=False), *_bn_act(64, nn.ReLU),
                  _XceptionBlock(64, 128, 2, 2, start_with_relu=False),
                  _XceptionBlock(128, 256, 2, 2),
                  _XceptionBlock(256, 728, 2, 2)]
        layers += [_XceptionBlock(728, 728, 3, 1) for _ in range(8)]
        layers += [_XceptionBlock(728, 1024, 2, 2, grow_first=False),
                   _SeparableConv(1024, 1536), *_bn_act(1536, nn.ReLU),
                   _SeparableConv(1536, 2048), *_bn_act(2048, nn.ReLU)]
        super().__init__(layers, 2048, num_classes)


def xception():
    return Xception()


# ---- DarkNet-53 ----------------------------------------------------------------

def _conv_leaky(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.LeakyReLU(0.1, inplace=True))


class _DarkResidual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(_conv_leaky(c, c // 2, 1), _conv_leaky(c // 2, c, 3))

    def forward(self, x):
        return x + self.body(x)


class DarkNet53(_Classifier):
    """The YOLOv3 paper's table 1: a 3x3 conv, then five stages of a strided
    3x3 conv and 1, 2, 8, 8, 4 residual pairs, global average pool and a
    fully connected classifier."""
    def __init__(self, num_classes=1000):
        layers = [_conv_leaky(3, 32, 3)]
        c = 32
        for n in (1, 2, 8, 8, 4):
            layers.append(_conv_leaky(c, 2 * c, 3, 2))
            c *= 2
            layers += [_DarkResidual(c) for _ in range(n)]
        super().__init__(layers, c, num_classes)


def darknet53():
    return DarkNet53()


# ---- VoVNet-39 -----------------------------------------------------------------

def _conv_relu(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class _OSA(nn.Module):
    """One-shot aggregation: `layers` 3x3 convs in a chain; the input and
    every conv's output concatenated once, fused by a 1x1 conv."""
    def __init__(self, cin, mid, cout, layers=5):
        super().__init__()
        self.convs = nn.ModuleList(_conv_relu(cin if i == 0 else mid, mid, 3)
                                   for i in range(layers))
        self.fuse = _conv_relu(cin + layers * mid, cout, 1)

    def forward(self, x):
        outs = [x]
        for conv in self.convs:
            x = conv(x)
            outs.append(x)
        return self.fuse(torch.cat(outs, dim=1))


class VoVNet39(_Classifier):
    """The paper's table 1 (VoVNet-39): a three-conv stem (64, 64, 128; the
    first and last strided), four stages of OSA modules (1, 1, 2, 2 of them;
    3x3 convs 128, 160, 192, 224 wide; outputs 256, 512, 768, 1024), a
    3x3 max pool of stride 2 (ceil mode) before every stage but the first."""
    def __init__(self, num_classes=1000):
        layers = [_conv_relu(3, 64, 3, 2), _conv_relu(64, 64, 3), _conv_relu(64, 128, 3, 2)]
        cin = 128
        for i, (mid, cout, n) in enumerate(zip((128, 160, 192, 224), (256, 512, 768, 1024),
                                              (1, 1, 2, 2))):
            if i:
                layers.append(nn.MaxPool2d(3, 2, ceil_mode=True))
            for _ in range(n):
                layers.append(_OSA(cin, mid, cout))
                cin = cout
        super().__init__(layers, cin, num_classes)


def vovnet39():
    return VoVNet39()


# ---- RepVGG-A0 (training-time form) -------------------------------------------------

class _RepVGGBlock(nn.Module):
    """3x3 conv + BN, 1x1 conv + BN and (same shape only) BN of the input,
    summed, then ReLU: the form that trains (inference folds it into one
    3x3 conv, which is not what a training step runs)."""
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.dense = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                   nn.BatchNorm2d(cout))
        self.point = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                   nn.BatchNorm2d(cout))
        self.identity = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.dense(x) + self.point(x)
        if self.identity is not None:
            y = y + self.identity(x)
        return self.act(y)


class RepVGG(_Classifier):
    """Five stages, each starting with a stride-2 block; RepVGG-A's 1, 2, 4,
    14, 1 blocks; widths min(64, 64a), 64a, 128a, 256a, 512b with A0's
    a = 0.75, b = 2.5 (the paper's section 3.4 and table 2)."""
    def __init__(self, blocks=(1, 2, 4, 14, 1), a=0.75, b=2.5, num_classes=1000):
        widths = (min(64, int(64 * a)), int(64 * a), int(128 * a), int(256 * a), int(512 * b))
        layers, cin = [], 3
        for n, cout in zip(blocks, widths):
            for i in range(n):
                layers.append(_RepVGGBlock(cin, cout, 2 if i == 0 else 1))
                cin = cout
        super().__init__(layers, cin, num_classes)


def repvgg_a0():
    return RepVGG()


# ---- PoolFormer-S12 ------------------------------------------------------------

class _PoolFormerBlock(nn.Module):
    """x + s1 * (pool(norm(x)) - norm(x)), then x + s2 * mlp(norm(x)); group
    norm with one group, 3x3 average pool of stride 1 that does not count
    padding, a GELU MLP of 1x1 convs four times wide, layer scales 1e-5."""
    def __init__(self, dim, mlp_ratio=4, scale=1e-5):
        super().__init__()
        self.norm1 = nn.GroupNorm(1, dim)
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.norm2 = nn.GroupNorm(1, dim)
        self.mlp = nn.Sequential(nn.Conv2d(dim, dim * mlp_ratio, 1), nn.GELU(),
                                 nn.Conv2d(dim * mlp_ratio, dim, 1))
        self.scale1 = nn.Parameter(scale * torch.ones(dim, 1, 1))
        self.scale2 = nn.Parameter(scale * torch.ones(dim, 1, 1))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.scale1 * (self.pool(y) - y)
        return x + self.scale2 * self.mlp(self.norm2(x))


class PoolFormer(nn.Module):
    """PoolFormer-S12 (the paper's table 1): a 7x7 stride-4 patch embedding,
    stages of 2, 2, 6, 2 blocks 64, 128, 320, 512 wide, each later stage
    entered through a 3x3 stride-2 conv; a final group norm, the spatial
    mean and a linear classifier."""
    def __init__(self, layers=(2, 2, 6, 2), dims=(64, 128, 320, 512), num_classes=1000):
        super().__init__()
        blocks = [nn.Conv2d(3, dims[0], 7, 4, 2)]
        for i, (n, dim) in enumerate(zip(layers, dims)):
            if i:
                blocks.append(nn.Conv2d(dims[i - 1], dim, 3, 2, 1))
            blocks += [_PoolFormerBlock(dim) for _ in range(n)]
        blocks.append(nn.GroupNorm(1, dims[-1]))
        self.features = nn.Sequential(*blocks)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        return self.head(self.features(x).mean([-2, -1]))


def poolformer_s12():
    return PoolFormer()


MODELS = ("xception", "darknet53", "vovnet39", "repvgg_a0", "poolformer_s12")

if __name__ == "__main__":  # parameter counts, for a reader checking against the papers
    for name in MODELS:
        m = globals()[name]()
        print("%-15s %6.1f M parameters" % (name, sum(p.numel() for p in m.parameters()) / 1e6))
