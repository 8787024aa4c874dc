/* The allowlist of agent public keys.
 *
 * Allowlist file: one agent public key (40 z85 characters) per line,
 * optionally followed by a label (an agent's agent.pub line as it is);
 * blank lines and '#' comments are ignored. An unparsable line makes the
 * whole file invalid, so a typo never silently locks an agent out or in. */
#ifndef TC_ALLOWLIST_H
#define TC_ALLOWLIST_H

#include <stddef.h>

/* A label is cut to this many characters. */
#define TC_ALLOWLIST_LABEL_MAX 128

typedef struct tc_allowlist tc_allowlist_t;

/* Load `path`. */
int tc_allowlist_load(const char *path, tc_allowlist_t **out);
void tc_allowlist_destroy(tc_allowlist_t **self_p);
size_t tc_allowlist_count(const tc_allowlist_t *self);
/* The label of `key`, "" when it has none, or NULL when it is not listed. */
const char *tc_allowlist_find(const tc_allowlist_t *self, const char *key_z85);

#endif
