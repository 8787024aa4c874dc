#include "tc_progress.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct tc_progress {
    char *label; /* owned */
    uint64_t total;
    uint64_t done;
    double started;
    double last_draw;
    int tty;
    int drawn;
    uint64_t drawn_done; /* `done` as last drawn */
};

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tc_format_duration(double seconds, char *buf, unsigned long size)
{
    if (seconds < 0)
        seconds = 0;
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, size, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%lds", s);
}

tc_progress_t *tc_progress_new(const char *label, uint64_t total)
{
    tc_progress_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->label = strdup(label ? label : "");
    if (!self->label) {
        free(self);
        return NULL;
    }
    self->total = total;
    self->started = s_now();
    self->last_draw = 0;
    const char *force = getenv("TRAINCAST_PROGRESS");
    if (force && !strcmp(force, "plain"))
        self->tty = 0;
    else if (force && !strcmp(force, "none"))
        self->tty = -1;
    else
        self->tty = isatty(STDERR_FILENO) ? 1 : -1;
    return self;
}

void tc_progress_fit(const char *text, size_t max, char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t len = strlen(text);
    if (max + 1 > size)
        max = size - 1;
    if (len <= max) {
        snprintf(buf, size, "%s", text);
        return;
    }
    /* The words that fit with "..." after them; a first word longer than
     * that is all there is to show of it. */
    size_t keep = 0;
    for (size_t i = 0; i + 3 <= max && i < len; i++) {
        if (text[i] == ' ' && i + 3 <= max)
            keep = i;
    }
    while (keep > 0 && (text[keep - 1] == ' ' || strchr("|[(,;:", text[keep - 1])))
        keep--;
    if (keep == 0)
        keep = max >= 3 ? max - 3 : 0;
    snprintf(buf, size, "%.*s%s", (int)keep, text, max >= 3 ? "..." : "");
}

/* The width of the terminal on stderr (80 when it does not say). */
static int s_columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    int c = env ? atoi(env) : 0;
    return c >= 20 ? c : 80;
}

static void s_draw(tc_progress_t *self, const char *item, int final)
{
    double elapsed = s_now() - self->started;
    char eta[32] = "?", spent[32];
    tc_format_duration(elapsed, spent, sizeof spent);
    if (self->done > 0 && self->total >= self->done)
        tc_format_duration(elapsed / (double)self->done * (double)(self->total - self->done), eta,
                           sizeof eta);
    double frac = self->total ? (double)self->done / (double)self->total : 1.0;
    if (self->tty == 1) {
        char bar[31];
        int filled = (int)(frac * 30.0);
        for (int i = 0; i < 30; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[30] = '\0';
        char counts[160];
        int cl = snprintf(counts, sizeof counts, " [%s] %llu/%llu %3.0f%% %s ETA %s", bar,
                          (unsigned long long)self->done, (unsigned long long)self->total,
                          frac * 100.0, spent, eta);
        /* The line stays within the terminal: the label and the item are
         * shortened between words, never inside one. */
        int room = s_columns() - 1 - cl;
        char label[256], what[256] = "";
        tc_progress_fit(self->label, room > 8 ? (size_t)room : 8, label, sizeof label);
        room -= (int)strlen(label) + 1;
        if (item && room > 8)
            tc_progress_fit(item, (size_t)room, what, sizeof what);
        fprintf(stderr, "\r\033[K%s%s%s%s", label, counts, *what ? " " : "", what);
        if (final)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "%s: %llu/%llu (%.0f%%) elapsed %s ETA %s%s%s\n", self->label,
                (unsigned long long)self->done, (unsigned long long)self->total, frac * 100.0,
                spent, eta, item ? " " : "", item ? item : "");
    }
    fflush(stderr);
    self->drawn = 1;
    self->drawn_done = self->done;
}

void tc_progress_update(tc_progress_t *self, uint64_t done, const char *item)
{
    if (!self || self->tty < 0)
        return;
    self->done = done;
    double now = s_now();
    double every = self->tty == 1 ? 0.1 : 5.0;
    if (now - self->last_draw >= every || (done == self->total && self->tty == 1)) {
        self->last_draw = now;
        s_draw(self, item, 0);
    }
}

void tc_progress_destroy(tc_progress_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_progress_t *self = *self_p;
    /* A plain line that already showed the final count is not repeated. */
    bool shown = self->tty == 0 && self->drawn && self->drawn_done == self->done;
    if (self->tty >= 0 && (self->drawn || self->done > 0) && !shown)
        s_draw(self, NULL, 1);
    free(self->label);
    free(self);
    *self_p = NULL;
}
