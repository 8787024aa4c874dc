#!/usr/bin/env python3
"""agent/harness/trace_runner.py's time per op class from a profiled step,
on events shaped as PyTorch's profiler gives them (no GPU needed): on a GPU
every kernel is listed twice, once inside the host op that launched it (its
self device time) and once as an event of its own; each must count once,
in the class of the op that launched it, whatever the kernel is named."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "..", "agent", "harness"))
import trace_runner  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


class Kind:
    def __init__(self, name):
        self.name = name


class Ev:
    """A FunctionEvent: name, device type, parent, self times (us)."""

    def __init__(self, name, parent=None, device="CPU", dev_us=0.0, cpu_us=0.0, old=False):
        self.name = name
        self.cpu_parent = parent
        self.device_type = Kind(device)
        self.self_cpu_time_total = cpu_us
        self.self_cuda_time_total = dev_us
        if not old:
            self.self_device_time_total = dev_us


def gpu_step(old=False):
    """One step's events: each kernel also listed as a CUDA event."""
    ev = []
    conv = Ev("aten::conv2d", cpu_us=30, old=old)
    ev += [conv, Ev("aten::cudnn_convolution", conv, dev_us=400, cpu_us=20, old=old),
           Ev("sm90_xmma_fprop_implicit_gemm_tf32", None, "CUDA", dev_us=400, old=old)]
    dw = Ev("aten::conv2d", cpu_us=30, old=old)
    ev += [dw, Ev("aten::_conv_depthwise2d", dw, dev_us=150, cpu_us=10, old=old),
           Ev("conv_depthwise2d_forward_kernel", None, "CUDA", dev_us=150, old=old)]
    ev += [Ev("aten::relu_", dev_us=50, cpu_us=8, old=old),
           Ev("vectorized_elementwise_kernel<relu>", None, "CUDA", dev_us=50, old=old)]
    opt = Ev("Optimizer.step#SGD.step", cpu_us=100, old=old)
    ev += [opt, Ev("aten::_foreach_add_", opt, dev_us=70, cpu_us=40, old=old),
           Ev("multi_tensor_apply_kernel", None, "CUDA", dev_us=70, old=old)]
    ev += [Ev("Memcpy HtoD (Pageable -> Device)", None, "CUDA", dev_us=5, old=old)]
    return ev


for old in (False, True):
    t = trace_runner.op_class_times(gpu_step(old), cuda=True)
    api = "self_cuda_time_total (1.13)" if old else "self_device_time_total"
    check(abs(t.get("conv", 0) - 0.55) < 1e-9,
          "%s: conv is the cuDNN and depthwise kernels once (0.55 ms), got %s" % (api, t))
    check(abs(t.get("act", 0) - 0.05) < 1e-9, "%s: act 0.05 ms, got %s" % (api, t))
    check(abs(t.get("other", 0) - 0.07) < 1e-9,
          "%s: the optimizer's kernels once in other (0.07 ms), no kernel counted by its "
          "own name, got %s" % (api, t))
    check(abs(sum(t.values()) - 0.67) < 1e-9,
          "%s: the classes add up to the device time of the kernels (0.67 ms), got %s"
          % (api, sum(t.values())))

cpu = [Ev("aten::conv2d", cpu_us=900), Ev("aten::relu_", cpu_us=100),
       Ev("aten::mkldnn_convolution", None, cpu_us=800)]
cpu[2].cpu_parent = cpu[0]
t = trace_runner.op_class_times(cpu, cuda=False)
check(abs(t.get("conv", 0) - 1.7) < 1e-9 and abs(t.get("act", 0) - 0.1) < 1e-9,
      "cpu: self CPU time per class, got %s" % t)

for name, want in [("aten::layer_norm", "norm"), ("NativeLayerNormBackward0", "norm"),
                   ("aten::softmax", "softmax"), ("aten::_softmax_backward_data", "softmax"),
                   ("aten::log_softmax", "other"), ("aten::mean", "reduce"),
                   ("aten::contiguous", "copy"), ("aten::constant_pad_nd", "copy"),
                   ("aten::transpose", "shape"), ("aten::_reshape_alias", "shape")]:
    got = trace_runner.op_class(name)
    check(got == want, "%s is %s, got %s" % (name, want, got))

sys.exit(1 if failures else 0)
