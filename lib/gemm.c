/* gemm.c — the one door to BLIS: typed gemm with strides, single-threaded per call. */
#include "internal.h"

#include <blis.h>

/* Each call runs on one thread: the kernels parallelise over (batch, head, block)
 * themselves, which keeps the split, and so the rounding, independent of the thread
 * count. */
static rntm_t single_thread(void)
{
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    return rntm;
}

void la_gemm_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                 float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0) return;
    rntm_t rntm = single_thread();
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
                 (float *)a, rsa, csa, (float *)b, rsb, csb, &beta, c, rsc, csc, NULL, &rntm);
}

void la_gemm_f64(size_t m, size_t n, size_t k, double alpha, const double *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const double *b, ptrdiff_t rsb, ptrdiff_t csb, double beta,
                 double *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0) return;
    rntm_t rntm = single_thread();
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
                 (double *)a, rsa, csa, (double *)b, rsb, csb, &beta, c, rsc, csc, NULL, &rntm);
}
