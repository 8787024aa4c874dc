/* The framework runs a convolution for the agent: PyTorch itself, in a
 * helper process (agent/harness/gpu_env.py --serve), calls the op its
 * autograd calls for a direction (aten::convolution, or
 * aten::convolution_backward with the direction's output mask) on the
 * device, and times it. The GPU backend times every conv PyTorch runs with
 * its own kernels this way (depthwise, im2col + GEMM, dilated: no mirror of
 * those kernels can be as faithful), and asks the same process which
 * backend PyTorch selects for a conv (torch._C._select_conv_backend).
 *
 * One process per tc_fw_t; it holds one plan at a time, and a plan whose
 * turn it is not is planned again before it runs. Every answer is awaited
 * with a timeout; a dead or hung helper fails the call with the last lines
 * of its stderr. Not thread-safe. */
#ifndef TC_FW_CONV_H
#define TC_FW_CONV_H

#include "device.h"

#include <stddef.h>

typedef struct tc_fw tc_fw_t;

/* Start the helper for `device` ("cuda:0", or "cpu" for tests) with
 * $TRAINCAST_PYTHON. TC_ENOTFOUND without Python or PyTorch, TC_ENODEV
 * when PyTorch does not see the device, with the helper's reason. */
int tc_fw_open(const char *device, tc_fw_t **out);
void tc_fw_close(tc_fw_t **self_p);

/* The framework's version, as the helper reported it when it started. */
const char *tc_fw_version(const tc_fw_t *self);

/* PyTorch's own choice of backend for conv `c` (n set): "Cudnn",
 * "CudaDepthwise2d", "Slow2d", ...; "" when this PyTorch cannot say. */
int tc_fw_select(tc_fw_t *self, const tc_conv_config_t *c, char *backend, size_t size);

/* A conv plan run by the framework: one candidate named
 * "pytorch-native:<backend>", `route` is what tc_fw_plan_route() says. The
 * plan borrows `fw`, which must outlive it. */
int tc_fw_plan_create(tc_fw_t *fw, const tc_conv_spec_t *spec, const char *route, void **plan);

/* The plan functions of a backend interface (device.h) for such plans;
 * backends forward to them, and tests use it directly. */
extern const tc_backend_iface_t tc_fw_plan_iface;

#endif
