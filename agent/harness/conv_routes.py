#!/usr/bin/env python3
"""Where PyTorch really sent each convolution of one training step.

Trains a torchvision model for one step (after a warm-up step) under the
profiler and prints, for every Conv2d in the order the forward pass calls
it, one JSON line:

  {"c":64,"h":56,"w":56,"k":64,"r":3,"s":3,"pad_h":1,"pad_w":1,"stride_h":1,
   "stride_w":1,"dil_h":1,"dil_w":1,"groups":1,"first":false,
   "fwd":"onednn","bwd":"native"}

fwd is "onednn" when the forward call recorded aten::mkldnn_convolution,
"native" for aten::_slow_conv2d_forward, "native-dilated" for
aten::slow_conv_dilated2d; bwd likewise from the ops under the matching
aten::convolution_backward (aten::_slow_conv2d_backward, or none of the
native ones: oneDNN, whose backward has no op of its own). The agent's
routing (agent/devices/cpu/cpu_route.h) is checked against these lines
(tests/unit/agent/devices/test_conv_route.c).

usage: conv_routes.py --model NAME --batch B --input-size S --threads T
"""

import argparse
import json
import sys

import cpu_env


BACKEND_OPS = {
    "aten::mkldnn_convolution": "onednn",
    "aten::_slow_conv2d_forward": "native",
    "aten::_slow_conv2d_backward": "native",
    "aten::slow_conv_dilated2d": "native-dilated",
}


def routes_within(outer, events):
    """The route of each `outer` event (aten::convolution or
    aten::convolution_backward): the backend op that starts within it (the profiler's parent links are not reliable in this
    version). oneDNN's backward records no op of its own."""
    routes = []
    for o in outer:
        s, e = o.time_range.start, o.time_range.end
        # Starts inside: the ends are rounded independently (to 1 us).
        found = [BACKEND_OPS[x.name] for x in events if x.name in BACKEND_OPS
                 and x.thread == o.thread and s <= x.time_range.start <= e]
        routes.append(found[0] if found else "onednn")
    return routes


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--input-size", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--allocator", default="system")
    a = p.parse_args(argv)

    def fail(msg):
        sys.stderr.write(msg + "\n")
        sys.exit(1)

    cpu_env.ensure_allocator(a.allocator, True, fail)
    out, sys.stdout = sys.stdout, sys.stderr
    import torch
    import torchvision
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).train()
    x = torch.randn(a.batch, 3, a.input_size, a.input_size)
    y = torch.randint(0, 1000, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    calls = []

    def hook(mod, inputs):
        inp = inputs[0]
        calls.append((mod, tuple(inp.shape), inp.data_ptr() == x.data_ptr()))

    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    for m in convs:
        if isinstance(m.padding, str):
            fail("%s: string padding is not supported" % a.model)

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        model.zero_grad()

    step()
    handles = [m.register_forward_pre_hook(hook) for m in convs]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True) as prof:
        step()
    for h in handles:
        h.remove()

    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    fwd = [e for e in events if e.name == "aten::convolution"]
    bwd = [e for e in events if e.name == "aten::convolution_backward"]
    if len(fwd) != len(calls):
        fail("%d conv calls but %d aten::convolution events" % (len(calls), len(fwd)))
    # Backward events in the forward calls' order: match each to a forward
    # call by its input and weight shapes (grad_output, input, weight).
    backend = [e for e in events if e.name in BACKEND_OPS]
    bwd_by_shape = {}
    for e, route in zip(bwd, routes_within(bwd, backend)):
        shapes = e.input_shapes
        key = (tuple(shapes[1]), tuple(shapes[2]), tuple(shapes[0])) if len(shapes) >= 3 else None
        bwd_by_shape.setdefault(key, []).append(route)
    for (mod, shape, first), ev, fwd_route in zip(calls, fwd, routes_within(fwd, backend)):
        r, s = mod.kernel_size
        p_out = (shape[2] + 2 * mod.padding[0] - mod.dilation[0] * (r - 1) - 1) // mod.stride[0] + 1
        q_out = (shape[3] + 2 * mod.padding[1] - mod.dilation[1] * (s - 1) - 1) // mod.stride[1] + 1
        key = (shape, tuple(mod.weight.shape), (shape[0], mod.out_channels, p_out, q_out))
        routes = bwd_by_shape.get(key)
        out.write(json.dumps({
            "c": shape[1], "h": shape[2], "w": shape[3], "k": mod.out_channels, "r": r, "s": s,
            "pad_h": mod.padding[0], "pad_w": mod.padding[1],
            "stride_h": mod.stride[0], "stride_w": mod.stride[1],
            "dil_h": mod.dilation[0], "dil_w": mod.dilation[1], "groups": mod.groups,
            "first": first, "fwd": fwd_route,
            "bwd": routes.pop(0) if routes else "missing",
        }) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
