/* "Did you mean ...?" for names a user typed: the closest of the names a
 * command knows (flags, subcommands, model names), by edit distance with
 * adjacent transpositions counted once ("bacth" is one edit from "batch"). */
#ifndef TC_SUGGEST_H
#define TC_SUGGEST_H

#include <stddef.h>

/* Edit distance between `a` and `b` (insertions, deletions, substitutions
 * and swaps of two adjacent characters, each costing 1; case-sensitive).
 * Strings longer than 255 bytes compare as far apart (SIZE_MAX). */
size_t tc_suggest_distance(const char *a, const char *b);

/* The candidate closest to `typed`, or NULL when none is close enough to be
 * a typo of it: at most 1 edit for names of up to 4 characters, 2 up to 8,
 * 3 beyond (and fewer edits than the typed name's length). A candidate that
 * starts with `typed` (a name cut short) counts as close. Ties go to the
 * first candidate. `candidates` holds `n` strings; NULL entries are
 * skipped. */
const char *tc_suggest(const char *typed, const char *const *candidates, size_t n);

#endif
