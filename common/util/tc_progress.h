/* Progress for long work: a redrawn bar with ETA when stderr is a terminal,
 * kept within its width, and nothing otherwise. TRAINCAST_PROGRESS=plain
 * asks for plain lines instead (at most one every few seconds, and at the
 * end: logs of scripts), TRAINCAST_PROGRESS=none for nothing. */
#ifndef TC_PROGRESS_H
#define TC_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tc_progress tc_progress_t;

/* `label` is copied. Returns NULL only when out of memory. */
tc_progress_t *tc_progress_new(const char *label, uint64_t total);
/* Report that `done` of total items are finished; `item` (may be NULL)
 * names the one being worked on. */
void tc_progress_update(tc_progress_t *self, uint64_t done, const char *item);
/* Finish the line and free. Accepts NULL; nulls the pointer. */
void tc_progress_destroy(tc_progress_t **self_p);

/* `text` in at most `max` bytes: whole, or its words that fit followed by
 * "..." (a word is never cut, unless the first alone is too long). Into
 * buf of `size`. */
void tc_progress_fit(const char *text, size_t max, char *buf, size_t size);

/* Format seconds as "1h02m", "3m05s" or "12s". */
void tc_format_duration(double seconds, char *buf, unsigned long size);

#endif
