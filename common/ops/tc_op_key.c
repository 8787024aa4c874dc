#include "tc_op_key.h"

#include "tc_wire.h"

void tc_key_json_U32(tc_buf_t *b, uint32_t v)
{
    tc_buf_printf(b, "%u", v);
}

void tc_key_json_DTYPE(tc_buf_t *b, Traincast__V1__DType v)
{
    tc_buf_json_str(b, tc_dtype_name(v));
}

void tc_key_json_LAYOUT(tc_buf_t *b, Traincast__V1__Layout v)
{
    tc_buf_json_str(b, tc_layout_name(v));
}

void tc_key_json_BOOL(tc_buf_t *b, bool v)
{
    tc_buf_puts(b, v ? "true" : "false");
}
