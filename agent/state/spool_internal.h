/* Private to the spool (spool.c: the queue of outgoing messages;
 * spool_rejected.c: the messages the aggregator refused). */
#ifndef TC_SPOOL_INTERNAL_H
#define TC_SPOOL_INTERNAL_H

#include "spool.h"

#include <pthread.h>

typedef char tc_spool_id_t[TC_MSGID_LEN + 1];

struct tc_spool {
    char *dir;
    pthread_mutex_t lock;
    tc_spool_id_t *ids; /* sorted: oldest first */
    size_t n, cap;
    size_t rejected;
};

/* fsync a directory (after a rename into or out of it). */
int tc_spool_fsync_dir(const char *dir);
/* The index of waiting messages (callers hold the lock). */
int tc_spool_index_insert(tc_spool_t *self, const char *id);
void tc_spool_index_erase(tc_spool_t *self, const char *id);
/* Whether a file name is "<message id>.msg" (the id goes to `id`). */
int tc_spool_is_msg_name(const char *name, char id[TC_MSGID_LEN + 1]);
/* DIR/<id>.msg */
void tc_spool_msg_path(const tc_spool_t *self, const char *id, char *out, size_t size);

#endif
