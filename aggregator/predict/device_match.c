#include "device_match.h"

#include "tc_buf.h"
#include "tc_cli.h"
#include "tc_error.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
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
    for (size_t j = 0; j < n_all; j++) {
        if (*all[j].alias && !strcasecmp(all[j].alias, name)) {
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
            tc_buf_printf(&list, "%s'%s'%s%s%s", j ? ", " : "", all[j].name,
                          *all[j].alias ? " (" : "", all[j].alias, *all[j].alias ? ")" : "");
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

/* Words of a device's model name that say nothing about which it is. */
static bool s_noise_word(const char *w, size_t len)
{
    static const char *const noise[] = {"AMD",        "Intel",    "Intel(R)", "NVIDIA",
                                        "GeForce",    "CPU",      "Processor", "(R)",
                                        "(TM)",       "Core(TM)", "Xeon(R)",  "Corporation",
                                        "Technologies"};
    for (size_t k = 0; k < sizeof noise / sizeof noise[0]; k++) {
        if (strlen(noise[k]) == len && !strncasecmp(noise[k], w, len))
            return true;
    }
    /* "16-Core" */
    return len > 5 && !strncasecmp(w + len - 5, "-Core", 5);
}

void tc_device_alias_default(const char *name, char *buf, size_t size)
{
    /* The model: the name before " (" (threads), " [" (its software) or
     * " @" (a clock). */
    size_t model_len = strlen(name);
    static const char *const stops[] = {" (", " [", " @"};
    for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
        const char *at = strstr(name, stops[k]);
        if (at && (size_t)(at - name) < model_len)
            model_len = (size_t)(at - name);
    }
    /* A CPU device's threads: "(1 thread)", "(16 threads)". */
    char suffix[16] = "";
    const char *paren = strstr(name, " (");
    unsigned threads = 0;
    char word[16];
    if (paren && sscanf(paren, " (%u %15[a-z]", &threads, word) == 2 &&
        !strncmp(word, "thread", 6))
        snprintf(suffix, sizeof suffix, " %ut", threads);
    char out[TC_DEVICE_ALIAS_MAX + 1] = "";
    size_t len = 0, room = TC_DEVICE_ALIAS_MAX - strlen(suffix);
    for (size_t i = 0; i < model_len;) {
        while (i < model_len && isspace((unsigned char)name[i]))
            i++;
        size_t start = i;
        while (i < model_len && !isspace((unsigned char)name[i]))
            i++;
        size_t wl = i - start;
        if (wl == 0 || s_noise_word(name + start, wl))
            continue;
        size_t need = wl + (len ? 1 : 0);
        if (len + need > room) {
            if (len == 0) /* one long word: as much of it as fits */
                wl = need = room;
            else
                break;
        }
        if (len)
            out[len++] = ' ';
        for (size_t k = 0; k < wl; k++) {
            char c = name[start + k];
            out[len++] = c == ',' || c == '=' || c == '#' ? '-' : c;
        }
        out[len] = '\0';
    }
    if (!len)
        snprintf(out, sizeof out, "device");
    snprintf(buf, size, "%s%s", out, suffix);
}

void tc_device_alias_defaults(tc_device_class_t *all, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (all[i].alias_set)
            continue;
        char base[TC_DEVICE_ALIAS_MAX + 1];
        tc_device_alias_default(all[i].name, base, sizeof base);
        snprintf(all[i].alias, sizeof all[i].alias, "%s", base);
        for (unsigned k = 2;; k++) {
            bool taken = false;
            for (size_t j = 0; j < n && !taken; j++)
                taken = j != i && (all[j].alias_set || j < i) &&
                        !strcasecmp(all[j].alias, all[i].alias);
            if (!taken)
                break;
            char tag[16];
            int tl = snprintf(tag, sizeof tag, " #%u", k);
            int keep = (int)strlen(base);
            if (keep + tl > TC_DEVICE_ALIAS_MAX)
                keep = TC_DEVICE_ALIAS_MAX - tl;
            while (keep > 0 && base[keep - 1] == ' ')
                keep--;
            snprintf(all[i].alias, sizeof all[i].alias, "%.*s%s", keep, base, tag);
        }
    }
}

int tc_device_alias_check(const char *alias)
{
    size_t len = strlen(alias);
    if (len == 0 || len > TC_DEVICE_ALIAS_MAX)
        return tc_fail(TC_EUSAGE, "an alias has 1 to %d characters (got %zu: '%s')",
                       TC_DEVICE_ALIAS_MAX, len, alias);
    if (isspace((unsigned char)alias[0]) || isspace((unsigned char)alias[len - 1]))
        return tc_fail(TC_EUSAGE, "the alias '%s' begins or ends with a space", alias);
    if (strpbrk(alias, ",=#"))
        return tc_fail(TC_EUSAGE, "the alias '%s' has a ',', '=' or '#' (it is used in --gpu "
                                  "lists and price files)",
                       alias);
    for (const char *p = alias; *p; p++) {
        if (iscntrl((unsigned char)*p))
            return tc_fail(TC_EUSAGE, "the alias '%s' has a control character", alias);
    }
    return 0;
}
