/* linear.c — STUB: linear attention (non-causal, chunked causal, recurrent) and step API. */
#include "internal.h"

la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q,
                                            const float *k, const float *v, float *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q,
                                            const double *k, const double *v, double *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }

la_status la_linear_state_create(la_linear_state **out, la_dtype dtype, size_t heads,
                                 size_t d_k, size_t d_v, la_feature_map fm, double eps)
{ (void)out; (void)dtype; (void)heads; (void)d_k; (void)d_v; (void)fm; (void)eps; return LA_EINVAL; }
void la_linear_state_free(la_linear_state *st) { (void)st; }
void la_linear_state_reset(la_linear_state *st) { (void)st; }
size_t la_linear_state_position(const la_linear_state *st) { (void)st; return 0; }
la_status la_linear_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                             const float *v_t, float *y_t)
{ (void)st; (void)q_t; (void)k_t; (void)v_t; (void)y_t; return LA_EINVAL; }
la_status la_linear_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                             const double *v_t, double *y_t)
{ (void)st; (void)q_t; (void)k_t; (void)v_t; (void)y_t; return LA_EINVAL; }
size_t la_linear_state_save_size(const la_linear_state *st) { (void)st; return 0; }
la_status la_linear_state_save(const la_linear_state *st, void *buf, size_t size)
{ (void)st; (void)buf; (void)size; return LA_EINVAL; }
la_status la_linear_state_restore(la_linear_state *st, const void *buf, size_t size)
{ (void)st; (void)buf; (void)size; return LA_EINVAL; }
