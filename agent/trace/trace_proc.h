/* Running a trace runner as a child process: its own process group, stdout
 * streamed to a callback, the tail of stderr kept for error messages, a
 * wall-clock limit after which the whole group is killed, and nothing left
 * behind when it returns. */
#ifndef TC_TRACE_PROC_H
#define TC_TRACE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_PROC_STDERR_TAIL 2048

typedef struct {
    char *const *argv;     /* argv[0] is looked up in PATH */
    char *const *env_add;  /* "KEY=VALUE" set in the child (NULL-terminated), or NULL */
    double timeout_s;      /* > 0 */
    /* Called with each chunk of stdout. Returning < 0 stops the run: the
     * process group is killed and tc_proc_run reports `stopped`. */
    int (*on_stdout)(const char *data, size_t n, void *arg);
    void *arg;
    /* Polled a few times a second (may be NULL); true stops the run like an
     * interrupt (TC_EINTR). */
    bool (*cancelled)(void *arg);
    void *cancel_arg;
} tc_proc_spec_t;

typedef struct {
    bool timed_out;     /* killed after timeout_s */
    bool stopped;       /* killed because on_stdout asked */
    bool exited;        /* exited on its own; exit_status is valid */
    int exit_status;
    int term_signal;    /* the signal that ended it, when !exited */
    double wall_s;
    uint64_t peak_rss_bytes; /* the child's own peak resident memory (not its children's) */
    char stderr_tail[TC_PROC_STDERR_TAIL]; /* last bytes of stderr, NUL-terminated */
} tc_proc_result_t;

/* Run to completion. Returns 0 whatever the child did (see `res`), or a
 * negative code when the agent could not run it (TC_EIO for pipe/fork
 * failures) or was interrupted (TC_EINTR, the child killed first). */
int tc_proc_run(const tc_proc_spec_t *spec, tc_proc_result_t *res);

/* Make SIGINT and SIGTERM interrupt tc_proc_run (which kills the child's
 * group and returns TC_EINTR) instead of killing the agent and leaving the
 * child running. */
void tc_proc_catch_interrupts(void);
/* True once SIGINT or SIGTERM arrived after tc_proc_catch_interrupts. */
bool tc_proc_interrupted(void);

/* The last few lines of a stderr tail, on one line ("a | b | c"), for a
 * reason string. */
void tc_proc_tail_lines(const char *tail, unsigned max_lines, char *out, size_t size);

#endif
