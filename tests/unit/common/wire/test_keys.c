/* CURVE key files and the aggregator's allowlist. */
#include "tc_test.h"
#include "tc_test_proc.h"

#include "tc_error.h"
#include "tc_zmq.h"
#include "allowlist.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

Test(keys, curve_is_available, .timeout = 10)
{
    cr_assert_eq(tc_curve_check(), 0, "%s", tc_errmsg());
}

Test(keys, generated_pair_round_trips_through_files, .timeout = 30)
{
    char dir[1200], path[1400];
    tc_test_tmpdir("keys", dir, sizeof dir);
    strcat(dir, "/deep/er");
    tc_keypair_t kp, back;
    cr_assert_eq(tc_keypair_generate(&kp), 0);
    cr_expect(tc_key_z85_valid(kp.public_z85));
    cr_expect(tc_key_z85_valid(kp.secret_z85));
    cr_assert_eq(tc_keypair_write(dir, "node", "node-label", &kp, false), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_keypair_write(dir, "node", "node-label", &kp, false), TC_EINVAL,
                 "an existing key pair is not replaced without force");
    cr_expect(strstr(tc_errmsg(), "--force") != NULL);

    snprintf(path, sizeof path, "%s/node.key", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(tc_keypair_read(path, &back), 0, "%s", tc_errmsg());
    cr_expect_str_eq(back.public_z85, kp.public_z85, "public key derived from the secret one");
    cr_expect_str_eq(back.secret_z85, kp.secret_z85);

    char pub[TC_KEY_Z85_LEN + 1];
    snprintf(path, sizeof path, "%s/node.pub", dir);
    cr_assert_eq(tc_pubkey_read(path, pub), 0);
    cr_expect_str_eq(pub, kp.public_z85);
    cr_expect(tc_test_file_contains(path, "node-label"));
}

Test(keys, bad_key_files_are_refused, .timeout = 30)
{
    char dir[1200], path[1400];
    tc_test_tmpdir("keys-bad", dir, sizeof dir);
    char pub[TC_KEY_Z85_LEN + 1];
    tc_keypair_t kp;
    snprintf(path, sizeof path, "%s/short.pub", dir);
    tc_test_write_file(path, "abc\n");
    cr_expect_eq(tc_pubkey_read(path, pub), TC_EINVAL);
    snprintf(path, sizeof path, "%s/empty.pub", dir);
    tc_test_write_file(path, "# only a comment\n\n");
    cr_expect_eq(tc_pubkey_read(path, pub), TC_EINVAL);
    snprintf(path, sizeof path, "%s/none.key", dir);
    cr_expect_eq(tc_keypair_read(path, &kp), TC_ENOTFOUND);
    cr_expect(strstr(tc_errmsg(), "keygen") != NULL, "%s", tc_errmsg());
    /* 40 characters, but one is not z85. */
    cr_expect(!tc_key_z85_valid("0123456789012345678901234567890123456 \"x"));
    cr_expect(!tc_key_z85_valid(NULL));
}

Test(allowlist, keys_labels_comments_and_errors, .timeout = 30)
{
    char dir[1200], path[1400];
    tc_test_tmpdir("allowlist", dir, sizeof dir);
    tc_keypair_t a, b, c, h;
    cr_assert_eq(tc_keypair_generate(&a), 0);
    cr_assert_eq(tc_keypair_generate(&b), 0);
    cr_assert_eq(tc_keypair_generate(&c), 0);
    /* '#' is a z85 character: inside a key it does not start a comment. */
    int tries = 0;
    do
        cr_assert_eq(tc_keypair_generate(&h), 0);
    while (!strchr(h.public_z85, '#') && ++tries < 1000);
    cr_assert(strchr(h.public_z85, '#'), "no key with '#' in 1000 tries");
    const char *hashkey = h.public_z85;
    char text[1024];
    snprintf(text, sizeof text,
             "# agents allowed to connect\n\n%s gpu-box-1\n  %s\t\n%s with # inside\n", a.public_z85,
             c.public_z85, hashkey);
    snprintf(path, sizeof path, "%s/allowlist", dir);
    tc_test_write_file(path, text);
    tc_allowlist_t *al = NULL;
    cr_assert_eq(tc_allowlist_load(path, &al), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_allowlist_count(al), 3);
    cr_expect_str_eq(tc_allowlist_find(al, a.public_z85), "gpu-box-1");
    cr_expect_str_eq(tc_allowlist_find(al, c.public_z85), "");
    cr_expect_str_eq(tc_allowlist_find(al, hashkey), "with # inside");
    cr_expect_null(tc_allowlist_find(al, b.public_z85));
    tc_allowlist_destroy(&al);

    /* One bad line makes the file invalid, naming the line. */
    snprintf(text, sizeof text, "%s ok\nnot-a-key\n", a.public_z85);
    tc_test_write_file(path, text);
    cr_expect_eq(tc_allowlist_load(path, &al), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), ":2:") != NULL, "%s", tc_errmsg());
    cr_expect_null(al);

    snprintf(path, sizeof path, "%s/missing", dir);
    cr_expect_eq(tc_allowlist_load(path, &al), TC_ENOTFOUND);
}
