#include "device_match.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int tc_device_match(const tc_device_class_t *all, size_t n_all, const char *name,
                    const char *flag, size_t *hit)
{
    for (size_t j = 0; j < n_all; j++) {
        if (!strcmp(all[j].name, name)) {
            *hit = j;
            return 0;
        }
    }
    size_t matches = 0;
    tc_buf_t list = {0};
    for (size_t j = 0; j < n_all; j++) {
        if (strcasestr(all[j].name, name)) {
            *hit = j;
            tc_buf_printf(&list, "%s'%s'", matches++ ? ", " : "", all[j].name);
        }
    }
    int rc = 0;
    if (matches > 1) {
        rc = tc_fail(TC_EINVAL, "%s: '%s' matches %zu devices: %s; give more of the name", flag,
                     name, matches, tc_buf_str(&list));
    } else if (matches == 0) {
        for (size_t j = 0; j < n_all; j++)
            tc_buf_printf(&list, "%s'%s'", j ? ", " : "", all[j].name);
        rc = tc_fail(TC_EINVAL, "%s: unknown device '%s'; known devices: %s (or use %s all)",
                     flag, name, n_all ? tc_buf_str(&list) : "none yet", flag);
    }
    tc_buf_free(&list);
    return rc;
}

int tc_device_select(const tc_device_class_t *all, size_t n_all, const char *spec,
                     const char *flag, size_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t *idx = calloc(n_all + 1, sizeof *idx);
    if (!idx)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n = 0;
    int rc = 0;
    if (!strcmp(spec, "all")) {
        for (size_t i = 0; i < n_all; i++)
            idx[n++] = i;
        if (n == 0)
            rc = tc_fail(TC_EINVAL, "%s all: the store knows no devices yet; run agents "
                                    "against 'aggregator serve' (see README) first",
                         flag);
    } else {
        char **names = NULL;
        size_t n_names = 0;
        rc = tc_parse_name_list(spec, flag, &names, &n_names);
        for (size_t i = 0; rc == 0 && i < n_names; i++) {
            size_t hit = 0;
            rc = tc_device_match(all, n_all, names[i], flag, &hit);
            bool dup = false;
            for (size_t k = 0; rc == 0 && k < n; k++)
                dup |= idx[k] == hit;
            if (rc == 0 && !dup)
                idx[n++] = hit;
        }
        tc_free_strv(names, n_names);
    }
    if (rc < 0) {
        free(idx);
        return rc;
    }
    *out = idx;
    *n_out = n;
    return 0;
}
