/* cost.c — STUB: the FLOP and memory model. */
#include "internal.h"

la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype, la_cost *out)
{ (void)kernel; (void)p; (void)dtype; (void)out; return LA_EINVAL; }
