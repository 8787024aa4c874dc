/* The store's side of fitting: reading training data (traces, conv sums,
 * model layers) and writing and reading fits (schema/004_fits.sql).
 *
 * Errors: TC_ENOTFOUND (unknown device, no fit), TC_EINVAL (the data cannot
 * make a fit: no traces, conv benchmarks missing, no model graph), each
 * with a message that says what to run; TC_EDB when the database fails. */
#ifndef TC_STORE_FIT_H
#define TC_STORE_FIT_H

#include "fit.h"
#include "store.h"

/* The training data of every device name in `devices` (n_devices of them;
 * none: every device name with traces), one group per device name,
 * framework, policy and dtype as the traces were taken. For each successful
 * (model, batch): `stat` of its traces' medians, their spreads, the sum of
 * the conv benchmarks of the device name at that batch (each conv's time by
 * tc_fit_conv_time under `stat` from its benchmarks, as predict looks them
 * up; the directions of tc_conv_step.h; times multiplicity; configs matched
 * by shape and layout with the traces' dtype) and the model's non-conv
 * features. Points whose traces all failed or ran out of memory are listed
 * as excluded; traces taken while the machine was busy (disturbed) are left
 * out unless `include_disturbed`, and counted. Free with tc_fit_groups_free. */
int tc_store_fit_groups(tc_store_t *s, char *const *devices, size_t n_devices,
                        tc_fit_stat_t stat, bool include_disturbed, tc_fit_group_t **out,
                        size_t *n_out);

/* Store `fit` (made from group `g`) with its points: fitted[i] is the fit's
 * in-sample prediction of point i; `held` (may be NULL, and each array may
 * be NULL) its nested leave-one-CNN-out prediction and that prediction's
 * interval (NaN: none); `candidates` are the features selection could
 * choose from. Sets fit->fit_id and fit->fitted_at_us. One transaction. */
int tc_store_fit_put(tc_store_t *s, tc_fit_t *fit, const tc_fit_group_t *g, const double *fitted,
                     const tc_fit_held_out_t *held, const char *const *candidates,
                     size_t n_candidates);

/* The newest fit of a device name. `framework`, `dtype` and `amp` NULL:
 * any (amp "": without AMP); `policy` NULL: any, "": traces without a
 * policy. TC_ENOTFOUND with a
 * message naming the command that makes one. */
int tc_store_fit_latest(tc_store_t *s, const char *device, const char *framework,
                        const char *policy, const char *dtype, const char *amp, tc_fit_t *out);
/* The same for every device name of devices[0..n) in one statement:
 * fits[i] filled and found[i] true where device i has such a fit. */
int tc_store_fit_latest_each(tc_store_t *s, const char *const *devices, size_t n,
                             const char *framework, const char *policy, const char *dtype,
                             const char *amp, tc_fit_t *fits, bool *found);

/* What every prediction for device name `device` must say ("" nothing):
 * that some of its devices follow a conv routing rule that was not checked
 * for their framework's version. */
int tc_store_routing_warning(tc_store_t *s, const char *device, char *buf, size_t size);
/* The same for devices[0..n) in one statement, into bufs[i] (each `size`). */
int tc_store_routing_warnings(tc_store_t *s, const char *const *devices, size_t n, char **bufs,
                              size_t size);

/* The op classes of the models each fit fit_ids[i] was trained on, as one
 * string "bn,act,pool,..." into bufs[i] (each `size`; "" for a fit without
 * stored models). One statement. */
int tc_store_fit_classes_each(tc_store_t *s, const long long *fit_ids, size_t n, char **bufs,
                              size_t size);

/* The held-out ratios measured / predicted of two fits at the (model,
 * batch) points both were trained on and predicted held out: ra[i], rb[i]
 * for i < *n (malloc'ed; caller frees both). */
int tc_store_fit_paired_ratios(tc_store_t *s, long long fit_a, long long fit_b, double **ra,
                               double **rb, size_t *n);

/* A fit by id. TC_ENOTFOUND if there is none. */
int tc_store_fit_get(tc_store_t *s, long long fit_id, tc_fit_t *out);

#endif
