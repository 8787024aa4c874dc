/* Choosing device classes by name, as --gpu (predict) and --device
 * (export) take them. */
#ifndef TC_DEVICE_MATCH_H
#define TC_DEVICE_MATCH_H

#include "store_model.h"

#include <stddef.h>

/* The class `name` names among `all`: its full name, else its alias
 * (ignoring case), else the one class whose name contains it (ignoring
 * case). *hit gets its index. TC_EINVAL naming `flag` when nothing matches
 * (listing the known classes) or when several do (listing those). */
int tc_device_match(const tc_device_class_t *all, size_t n_all, const char *name,
                    const char *flag, size_t *hit);

/* `spec` is "all" or a comma-separated list of names: the indices into
 * `all` it selects, each once, in the order given (all: every class).
 * *out is malloc'ed (caller frees). TC_EINVAL as tc_device_match, or when
 * "all" finds no classes. */
int tc_device_select(const tc_device_class_t *all, size_t n_all, const char *spec,
                     const char *flag, size_t **out, size_t *n_out);

/* The default alias of a device name: its model without the vendor's
 * words, and for a CPU device its thread count ("AMD EPYC (2 threads)
 * [tcmalloc ...]" -> "EPYC 2t", "NVIDIA GeForce RTX 4090" -> "RTX 4090"),
 * at most TC_DEVICE_ALIAS_MAX bytes, cut between words. Into buf. */
void tc_device_alias_default(const char *name, char *buf, size_t size);

/* Give every class of `all` without an alias set its default, made unique
 * (ignoring case) among them all by " #2", " #3", ... in name order. */
void tc_device_alias_defaults(tc_device_class_t *all, size_t n);

/* Whether `alias` may be set: 1 to TC_DEVICE_ALIAS_MAX bytes, no leading
 * or trailing space, no comma (--gpu lists), '=' or '#' (price files).
 * TC_EUSAGE saying what is wrong. */
int tc_device_alias_check(const char *alias);

#endif
