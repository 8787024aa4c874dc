/* One rule for the agent id (agent/state/agent_id.h): --agent-id, else the state
 * directory's, else the machine's; the state directory's id is the one its
 * agent (agent run / serve / push) sends with. */
#include "agent_id.h"
#include "identity.h"
#include "tc_error.h"

#include "tc_test.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[256];

static void s_setup(void)
{
    tc_test_scratch_dir("agent_id", NULL, s_dir, sizeof s_dir);
    /* No default state directory unless a test makes one. */
    char home[300];
    snprintf(home, sizeof home, "%s/home", s_dir);
    setenv("HOME", home, 1);
    unsetenv("TRAINCAST_AGENT_DIR");
}

static void s_teardown(void)
{
    (void)tc_test_remove_tree(s_dir);
}

TestSuite(agent_id, .init = s_setup, .fini = s_teardown);

Test(agent_id, an_explicit_id_wins, .timeout = 30)
{
    char id[256];
    cr_assert_eq(tc_agent_id("lab-box-7", s_dir, id, sizeof id), 0);
    cr_assert_str_eq(id, "lab-box-7");
}

Test(agent_id, without_a_state_directory_the_machine_decides, .timeout = 30)
{
    char id[256], machine[256], again[256];
    cr_assert_eq(tc_agent_id(NULL, NULL, id, sizeof id), 0, "%s", tc_errmsg());
    tc_agent_id_machine(machine, sizeof machine);
    cr_assert_str_eq(id, machine);
    cr_assert_eq(tc_agent_id(NULL, "", again, sizeof again), 0);
    cr_assert_str_eq(again, machine, "an empty --state is no state directory");
    struct stat st;
    char home_dir[400];
    snprintf(home_dir, sizeof home_dir, "%s/home/.traincast/agent", s_dir);
    cr_assert_neq(stat(home_dir, &st), 0, "asking for the id creates no state directory");
}

Test(agent_id, the_state_directory_id_is_used_everywhere, .timeout = 30)
{
    char state[400], id[256], id2[256];
    snprintf(state, sizeof state, "%s/state-a", s_dir);
    /* --state DIR: created with its id. */
    cr_assert_eq(tc_agent_id(NULL, state, id, sizeof id), 0, "%s", tc_errmsg());
    char machine[256];
    tc_agent_id_machine(machine, sizeof machine);
    cr_assert_str_neq(id, machine);
    /* The agent that uses the directory sends with the same id. */
    tc_identity_t *ident = NULL;
    cr_assert_eq(tc_identity_open(state, false, &ident), 0, "%s", tc_errmsg());
    cr_assert_str_eq(tc_identity_agent_id(ident), id);
    /* ... and so do offline writers while it holds the lock. */
    cr_assert_eq(tc_agent_id(NULL, state, id2, sizeof id2), 0);
    cr_assert_str_eq(id2, id);
    tc_identity_destroy(&ident);

    /* The default directory counts once it exists. */
    setenv("TRAINCAST_AGENT_DIR", state, 1);
    cr_assert_eq(tc_agent_id(NULL, NULL, id2, sizeof id2), 0);
    cr_assert_str_eq(id2, id);
    /* Another state directory is another agent. */
    char other[400];
    snprintf(other, sizeof other, "%s/state-b", s_dir);
    cr_assert_eq(tc_agent_id(NULL, other, id2, sizeof id2), 0);
    cr_assert_str_neq(id2, id);
}

Test(agent_id, an_unreadable_state_id_is_an_error, .timeout = 30)
{
    char state[400], path[500], id[256], machine[256];
    snprintf(state, sizeof state, "%s/broken", s_dir);
    mkdir(state, 0700);
    snprintf(path, sizeof path, "%s/agent_id", state);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f); /* empty */
    cr_assert_eq(tc_agent_id(NULL, state, id, sizeof id), TC_EINVAL);
    cr_assert(strstr(tc_errmsg(), "agent_id"), "%s", tc_errmsg());
    tc_agent_id_machine(machine, sizeof machine);
    cr_assert_str_eq(id, machine, "the machine's id is left in the buffer");
}

/* The id file, like everything in a state directory, is the agent user's
 * alone, whatever the umask. */
Test(agent_id, the_id_file_is_private, .timeout = 30)
{
    char state[400], id[256], path[500];
    snprintf(state, sizeof state, "%s/state-private", s_dir);
    mode_t old = umask(022);
    cr_assert_eq(tc_identity_read_agent_id(state, id, sizeof id), 0, "%s", tc_errmsg());
    umask(old);
    snprintf(path, sizeof path, "%s/agent_id", state);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "agent_id has mode %o", (unsigned)(st.st_mode & 0777));
    cr_assert_eq(stat(state, &st), 0);
    cr_expect_eq(st.st_mode & 0077, 0, "the state directory has mode %o",
                 (unsigned)(st.st_mode & 0777));
}
