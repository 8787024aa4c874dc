/* Choosing device classes by name, as --gpu (predict) and --device
 * (export) take them. */
#ifndef TC_DEVICE_MATCH_H
#define TC_DEVICE_MATCH_H

#include "store_model.h"

#include <stddef.h>

/* The class `name` names among `all`: its full name, else the one class
 * whose name contains it (ignoring case). *hit gets its index. TC_EINVAL
 * naming `flag` when nothing matches (listing the known classes) or when
 * several do (listing those). */
int tc_device_match(const tc_device_class_t *all, size_t n_all, const char *name,
                    const char *flag, size_t *hit);

/* `spec` is "all" or a comma-separated list of names: the indices into
 * `all` it selects, each once, in the order given (all: every class).
 * *out is malloc'ed (caller frees). TC_EINVAL as tc_device_match, or when
 * "all" finds no classes. */
int tc_device_select(const tc_device_class_t *all, size_t n_all, const char *spec,
                     const char *flag, size_t **out, size_t *n_out);

#endif
