/* softmax.c — STUB: fused and materialising softmax attention, hard attention. */
#include "internal.h"

la_status la_softmax_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_softmax_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_softmax_attention_materialized_f32(const la_problem *p, const float *q,
                                                const float *k, const float *v, float *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_softmax_attention_materialized_f64(const la_problem *p, const double *q,
                                                const double *k, const double *v, double *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_hard_attention_f32(const la_problem *p, const float *q, const float *k,
                                const float *v, float *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
la_status la_hard_attention_f64(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out)
{ (void)p; (void)q; (void)k; (void)v; (void)out; return LA_EINVAL; }
