/* Predicting a model's training time on device classes over batch sizes:
 * the sum of the device's conv benchmarks plus the fitted non-conv time,
 * with a 95 % prediction interval, throughput, epoch time, cost and memory. */
#ifndef TC_PREDICT_H
#define TC_PREDICT_H

#include "fit.h"
#include "memory.h"
#include "store_lookup.h"
#include "store_model.h"
#include "tc_conv_step.h"
#include "tc_model.h"

#include <stdbool.h>

/* Whether one (device, batch) row could be predicted, and if not, why. */
typedef enum {
    TC_PT_OK = 0,
    TC_PT_MISSING,      /* conv benchmarks at this batch are missing on the device */
    TC_PT_NO_FIT,       /* the device has no fit (no traces) */
    TC_PT_OUT_OF_RANGE, /* the batch is too far outside the fit's batch range */
} tc_pred_point_status_t;

/* "ok", "missing_benchmarks", "no_fit", "out_of_range". */
const char *tc_pred_point_status_name(tc_pred_point_status_t s);

typedef struct {
    unsigned batch;
    tc_pred_point_status_t status;
    char reason[512];    /* why it was not predicted ("" when ok); the device's note
                            says what to run */
    /* The rest is set when status is TC_PT_OK (NaN otherwise). */
    double conv_bench_ms; /* sum of conv benchmarks (the conv-time rule, tc_conv_step.h) */
    double conv_ms;      /* that sum times the fit's conv factor (conv.ms), if it has one */
    double conv_sd_ms;   /* their combined standard deviation (matmuls' included) */
    /* Where the fit benchmarks matmuls (fit.matmuls): the sum of their
     * benchmarks by their step rule (tc_matmul_step.h), and that sum times the
     * fit's factor as conv_ms is; 0 otherwise (the matmuls are then in
     * nonconv_ms). */
    double matmul_bench_ms;
    double matmul_ms;
    double nonconv_ms;   /* the fit's prediction */
    double total_ms;     /* predicted iteration time */
    double sd_ms;        /* standard deviation of a new measurement */
    double lo_ms, hi_ms; /* 95 % prediction interval */
    double images_per_s;
    double epoch_s;      /* ceil(dataset / batch) iterations */
    double cost;         /* per epoch; NaN without a price */
    double energy_kj;    /* per epoch: epoch_s times the device's training power;
                            NaN when no trace of it measured energy */
    double peak_bytes;   /* predicted peak memory; NaN unknown */
    int fits;            /* 1 fits, 0 does not, -1 unknown */
    bool clamped;        /* the fit predicted a negative conv or non-conv time
                            (an extrapolation it cannot make); shown as 0 */
} tc_pred_point_t;

typedef enum {
    TC_PRED_OK = 0,      /* the device has a fit: its points say what was predicted */
    TC_PRED_NO_FIT,      /* the device has no fit (no traces): no point is */
} tc_pred_status_t;

typedef struct {
    tc_device_class_t device;
    tc_pred_status_t status;
    /* Why some or all of its rows could not be predicted, and what to run
     * ("" when every row was predicted). */
    char note[1024];
    char warning[512];    /* said with every prediction ("" none): e.g. conv routing that
                             was not checked for the framework version */
    tc_fit_t fit;
    double price;         /* per device-hour; NaN none */
    double watts;         /* mean power while training (view device_training_power);
                             NaN when no trace of the fit's kind measured energy */
    char energy_source[16]; /* "nvml" or "rapl" ("" none) */
    size_t missing;       /* lookups (conv and matmul) not found */
    /* Every benchmark the model needs, batch after batch (in the request's
     * order): each batch's convs laid out as `step` says, then, where the fit
     * benchmarks matmuls, each matmul usage's directions in the model's order
     * (tc_matmul_step_directions), n_mm_items of them (owned). */
    tc_conv_step_layout_t step;
    size_t n_mm_items;
    size_t per_batch;          /* step.size + n_mm_items */
    tc_conv_lookup_t *lookups; /* owned: per_batch per batch */
    size_t n_lookups;
    tc_memory_model_t memory;
    tc_mem_point_t *mem;  /* owned: the traces the memory model learns from */
    size_t n_mem;
    bool mem_loaded;      /* mem read (tc_predict_prepare_all or tc_predict_device) */
    tc_pred_point_t *points; /* owned, one per batch */
    size_t n_points;
    /* Layer classes of the model that no CNN of the device's fit had, e.g.
     * "reduce (3 layers), other (1 layer)": its prediction extrapolates
     * there ("" when none). */
    char unseen[512];
} tc_pred_device_t;

/* Two devices at one batch size: can the faster be told from the other?
 * ratio = predicted time of `slower` / `faster`; lo..hi its 95 % interval:
 * from the pairs of held-out errors of the two fits at the same (model,
 * batch) points when there are enough (method "paired": the two devices'
 * errors on a CNN move together, so the ratio is surer than either time),
 * else from the two devices' intervals (method "intervals": apart or not). */
typedef struct {
    unsigned batch;
    size_t faster, slower; /* indices into the devices */
    double ratio, lo, hi;
    bool apart;            /* lo > 1: the faster is faster at 95 %, and neither
                              prediction has a caveat */
    const char *method;    /* "paired" or "intervals" */
    size_t pairs;          /* held-out pairs behind a paired interval */
    /* Why the two cannot be claimed apart whatever the interval says (NULL
     * none): "clamped" (a prediction's time was clamped at 0) or
     * "uncalibrated" (compared by intervals that are not calibrated). */
    const char *caveat;
} tc_pred_compare_t;

/* Whether the device's 95 % intervals are calibrated: its fit was validated
 * (the nested leave-one-CNN-out ran) and had enough held-out points for
 * the interval's quantiles (tc_fit_interval_min_points). Otherwise its
 * intervals come from the regression's own variance, or from errors that
 * selection made small, and read narrower than its errors. */
bool tc_pred_calibrated(const tc_pred_device_t *d);

typedef struct {
    const tc_model_t *model;
    const unsigned long *batches;
    size_t n_batches;
    double dataset_size;
    const char *framework; /* NULL: any */
    const char *dtype;     /* NULL: any */
    const char *amp;       /* NULL: any; "": without AMP */
    uint32_t input_size;   /* the --input-size the model was imported at; 0: its own */
    /* A batch below the fit's smallest / F or above its largest * F is not
     * predicted (TC_PT_OUT_OF_RANGE). 0: no limit. */
    double extrapolate;
} tc_pred_request_t;

/* How many conv look-ups a model needs per batch on one device: one per
 * distinct conv and direction its training step runs (the size of its
 * step's layout, tc_conv_step.h). */
size_t tc_predict_lookups_per_batch(const tc_model_t *m);

/* Build the conv lookups a model needs at every batch on every device with a
 * fit (of those with only[i] set, when `only` is not NULL), into each
 * d->lookups, and fetch them all in one statement; sets each d->missing. */
int tc_predict_lookup_all(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                          size_t n, const bool *only);
/* The same for one device with a fit. */
int tc_predict_lookup(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d);

/* What every device with a fit needs from the store besides its conv
 * look-ups, for all of them at once: the traces of its memory model and
 * the op classes its fit never saw (d->unseen). */
int tc_predict_prepare_all(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                           size_t n);

/* Compute the points of a device with a fit and its lookups (its memory
 * traces read here unless tc_predict_prepare_all did): each batch
 * whose conv benchmarks are all there and that lies in the fit's range
 * (req->extrapolate) is predicted; the others get their status and reason. */
int tc_predict_device(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *d);

/* Points for a device without a fit: every batch TC_PT_NO_FIT. */
int tc_predict_no_fit(const tc_pred_request_t *req, tc_pred_device_t *d);

/* How many points of `devs` were predicted, and how many were not. */
void tc_predict_count(const tc_pred_device_t *devs, size_t n, size_t *ok, size_t *not_ok);

/* Record every predicted row (status TC_PT_OK) of `devs` under `request_id`
 * in table predictions, in one transaction; *stored gets how many. */
int tc_predict_record(tc_store_t *s, const char *request_id, const tc_pred_request_t *req,
                      const tc_pred_device_t *devs, size_t n, size_t *stored);

/* Name the op classes of the model that the device's fit never saw (one
 * device; tc_predict_prepare_all does it for all). */
int tc_predict_unseen_classes(tc_store_t *s, const tc_model_t *m, tc_pred_device_t *d);

/* The pure part of a paired comparison: from the held-out ratios measured /
 * predicted of two devices at the same points (ra: the slower device's,
 * rb: the faster's), the 95 % interval of the factor by which the true
 * ratio of their times differs from the predicted one (split-conformal
 * quantiles of ra / rb). NaN both with fewer than 39 usable pairs; *pairs
 * counts the usable ones. */
int tc_predict_ratio_interval(const double *ra, const double *rb, size_t n, double *qlo,
                              double *qhi, size_t *pairs);

/* At every batch, the fastest predicted device against the second fastest
 * (devices with predictions only). Never apart when either prediction was
 * clamped, nor by intervals either of which is not calibrated (caveat
 * says which). *out is malloc'ed; *n_out may be 0. */
int tc_predict_compare(tc_store_t *s, const tc_pred_device_t *devs, size_t n,
                       tc_pred_compare_t **out, size_t *n_out);

void tc_pred_device_free(tc_pred_device_t *d);

#endif
