/* The result files of `agent run` and `agent serve`. What the built-in job
 * handlers measure is appended to a result file in the state directory
 * (STATE/results/NAME.tcr, the format of `agent bench --out`) and spooled
 * under the same message id. A later job resumes from the file, so nothing
 * is measured twice, and the aggregator still gets every record once.
 *
 * Beside each file, NAME.tcr.spooled records how many of its records are in
 * the spool already (or delivered) and the message id of the last of them.
 * Opening spools the records after that point (what a crash left between
 * the append and the spool), closing moves the point on. A record is thus
 * spooled again only after a crash, and then the aggregator acknowledges it
 * as already stored. A file replaced by another (the id does not match)
 * is spooled whole, for the same reason harmless. */
#ifndef TC_JOB_RESULTS_H
#define TC_JOB_RESULTS_H

#include "jobs.h"

typedef struct tc_job_results tc_job_results_t;

/* Open (creating `dir` and the file if needed) DIR/NAME.tcr for the job and
 * spool what was not spooled yet. */
int tc_job_results_open(tc_job_t *job, const char *dir, const char *name,
                        tc_job_results_t **out);

const char *tc_job_results_path(const tc_job_results_t *self);

/* Append a stamped envelope to the file, then spool it. */
int tc_job_results_append(tc_job_results_t *self, tc_envelope_t *env);

/* Record how far the file is spooled and close. Accepts NULL; nulls the
 * pointer. */
void tc_job_results_close(tc_job_results_t **self_p);

/* A file name part from free text (a device uuid, a policy): letters,
 * digits, '-', '.' and '_' kept, anything else replaced by '_'. */
void tc_job_results_name(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
