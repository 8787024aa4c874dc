"""Formatting shared by the accuracy report's modules (bench/accuracy_report.py)."""
import math
import os
import re

_FIT_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "aggregator", "fit", "fit_data.c")
_families = None


def family(name):
    """A CNN's architectural family as the fit groups it: read from the fit's
    own table (aggregator/fit/fit_data.c, s_families: name prefixes, first
    match), so the report and the fit cannot disagree."""
    global _families
    if _families is None:
        with open(_FIT_DATA) as f:
            text = f.read()
        table = text[text.index("s_families[] = {"):]
        table = table[:table.index("};")]
        _families = re.findall(r'\{"([^"]+)", "([^"]+)"\}', table)
        if not _families:
            raise RuntimeError("no family table in " + _FIT_DATA)
    base = cnn_name(name)
    for prefix, fam in _families:
        if base.startswith(prefix):
            return fam
    return base


# The families of the ConvNeXts and transformers (the fit's own family names):
# the report sets them apart from the CNNs of 2012-2019, as bench/accuracy.sh
# does for its apart-cnns and apart-modern analyses.
MODERN_FAMILIES = ("convnext", "vit", "swin", "maxvit")


def kind(name):
    """"modern" for a ConvNeXt or transformer, else "cnn"."""
    return "modern" if family(name) in MODERN_FAMILIES else "cnn"


def pct(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return "%.*f %%" % (digits, v)


def cnn_name(model_id):
    """torchvision:resnet18@112 -> resnet18; python:new_families.xception@112
    -> new_families.xception (a model a Python file builds)"""
    return re.sub(r"^(torchvision|python):|@\d+$", "", model_id)


def short_device(name):
    """The device name without its bracketed software stack, for narrow tables."""
    return re.sub(r"\s*\[.*\]\s*$", "", name)


if __name__ == "__main__":
    # `accuracy_fmt.py kind NAME...`: each model's kind on a line of its own
    # (bench/accuracy.sh splits its apart analyses by it).
    import sys
    if len(sys.argv) < 2 or sys.argv[1] != "kind":
        sys.exit("usage: accuracy_fmt.py kind NAME...")
    for name in sys.argv[2:]:
        print(kind(name))
