/* Growable buffers (common/util/tc_buf.h): growth and JSON escaping. */
#include "tc_buf.h"

#include <criterion/criterion.h>
#include <string.h>

Test(buf, grows_and_escapes, .timeout = 10)
{
    tc_buf_t b = {0};
    for (int i = 0; i < 1000; i++)
        tc_buf_printf(&b, "%04d", i);
    cr_assert_eq(b.len, 4000);
    cr_assert_eq(strncmp(b.data + 3996, "0999", 4), 0);
    tc_buf_reset(&b);
    tc_buf_json_str(&b, "a\"b\\c\n\x01");
    cr_assert_str_eq(tc_buf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\"");
    tc_buf_reset(&b);
    tc_buf_json_num(&b, 0.0 / 0.0);
    cr_assert_str_eq(tc_buf_str(&b), "null");
    tc_buf_free(&b);
}
