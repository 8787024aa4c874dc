/* Progress: shortened between words on a terminal, silent off one unless
 * asked for plain lines. */
#include "tc_progress.h"
#include "tc_test_proc.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(progress, fit_cuts_between_words)
{
    char buf[128];
    const char *label = "leave-one-CNN-out AMD EPYC (1 thread) [tcmalloc 2.10 | OpenBLAS 0.3.21]";
    tc_progress_fit(label, 200, buf, sizeof buf);
    cr_expect_str_eq(buf, label, "what fits stays whole");
    tc_progress_fit(label, 52, buf, sizeof buf);
    cr_expect_str_eq(buf, "leave-one-CNN-out AMD EPYC (1 thread) [tcmalloc...");
    for (size_t max = 8; max < strlen(label); max++) {
        tc_progress_fit(label, max, buf, sizeof buf);
        cr_expect_leq(strlen(buf), max, "%zu: '%s'", max, buf);
        size_t keep = strlen(buf) - 3;
        cr_expect_str_eq(buf + keep, "...");
        /* Every word shown is shown whole: what precedes "..." ends a word
         * of the label. */
        cr_expect(!strncmp(buf, label, keep) && (label[keep] == ' ' || keep == max - 3 ||
                                                 strchr("|[(,;:", label[keep])),
                  "%zu: '%s' cuts a word", max, buf);
    }
    tc_progress_fit("Supercalifragilistic", 10, buf, sizeof buf);
    cr_expect_str_eq(buf, "Superca...", "a single long word: as much as fits");
}

/* Run a progress of 3 items with stderr into a file; what was written. */
static void s_run(const char *mode, char *out, size_t size)
{
    if (mode)
        setenv("TRAINCAST_PROGRESS", mode, 1);
    else
        unsetenv("TRAINCAST_PROGRESS");
    char dir[1024], path[1100];
    tc_test_tmpdir("progress", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/stderr", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "%s", path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    tc_progress_t *p = tc_progress_new("working", 3);
    for (uint64_t i = 1; i <= 3; i++)
        tc_progress_update(p, i, "item");
    tc_progress_destroy(&p);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
}

Test(progress, silent_off_a_terminal_unless_plain)
{
    char out[4096];
    s_run(NULL, out, sizeof out);
    cr_expect_str_eq(out, "", "stderr is a file: no progress");
    s_run("none", out, sizeof out);
    cr_expect_str_eq(out, "");
    s_run("plain", out, sizeof out);
    cr_expect(strstr(out, "working: ") && strstr(out, "3/3"), "plain lines: '%s'", out);
    cr_expect_null(strchr(out, '\r'), "no redrawing in plain lines");
}
