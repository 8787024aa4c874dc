/* Reading stored models and the device classes predictions compare. */
#ifndef TC_STORE_MODEL_H
#define TC_STORE_MODEL_H

#include "fit.h"
#include "store.h"
#include "tc_conv.h"
#include "tc_features.h"

#include <stdbool.h>
#include <stdint.h>

/* The layers of a stored model as summaries for tc_features_from_layers.
 * *layers is malloc'ed (caller frees); TC_ENOTFOUND if the model has none. */
int tc_store_model_layers(tc_store_t *s, const char *model_id, tc_layer_summary_t **layers,
                          size_t *n);

/* The longest alias (aggregator alias), in bytes. */
#define TC_DEVICE_ALIAS_MAX 16

/* A device name (a hardware class) as the store knows it. */
typedef struct {
    char name[256];
    char kind[16];          /* cpu or cuda */
    uint64_t memory_bytes;  /* smallest among the devices of that name; 0 unknown */
    long devices;           /* physical devices of that name */
    unsigned threads;       /* CPU threads (cpu devices) */
    int gpu_index;          /* lowest GPU index (cuda devices) */
    char hosts[256];        /* hosts with such a device, comma-separated */
    long traces;
    bool has_fit;
    /* Its short name: the one set with `aggregator alias` (alias_set), else
     * "" until tc_device_alias_defaults (device_match.h) derives one. */
    char alias[TC_DEVICE_ALIAS_MAX + 1];
    bool alias_set;
} tc_device_class_t;

/* Every device name, sorted, with the aliases set for them. *out is
 * malloc'ed (caller frees). */
int tc_store_device_classes(tc_store_t *s, tc_device_class_t **out, size_t *n);

/* Set the alias of device name `device` (replacing its default or the
 * alias set before), or with alias NULL go back to the default.
 * TC_ENOTFOUND when the store knows no device of that name; TC_EINVAL when
 * another device has that alias already (ignoring case). */
int tc_store_device_alias_set(tc_store_t *s, const char *device, const char *alias);

/* A trace's peak memory with the model's features at its batch, for the
 * memory model. */
typedef struct {
    char model_id[256];
    unsigned batch;
    double peak_bytes; /* NaN when not recorded */
    bool oom;
    tc_features_t features;
} tc_mem_point_t;

/* Every ok trace with a recorded peak memory and every out-of-memory trace
 * of a device name whose model graph is stored. *out is malloc'ed. */
int tc_store_memory_points(tc_store_t *s, const char *device, tc_mem_point_t **out, size_t *n);
/* The same for every device name of devices[0..n) in one statement (and one
 * for the layers of their models): out[i], n_out[i] (malloc'ed). */
int tc_store_memory_points_each(tc_store_t *s, const char *const *devices, size_t n,
                                tc_mem_point_t **out, size_t *n_out);

#endif
