"""Formatting shared by the accuracy report's modules (bench/accuracy_report.py)."""
import math
import re


def pct(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return "%.*f %%" % (digits, v)


def cnn_name(model_id):
    """torchvision:resnet18@112 -> resnet18"""
    return re.sub(r"^torchvision:|@\d+$", "", model_id)


def short_device(name):
    """The device name without its bracketed software stack, for narrow tables."""
    return re.sub(r"\s*\[.*\]\s*$", "", name)
