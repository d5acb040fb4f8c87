/* featuremap.c — φ of linear attention in float and double: elu+1 and relu. */
#include "linear_internal.h"

#include <math.h>

/* elu(x) + 1 = x + 1 (x >= 0), exp(x) (x < 0): exp directly, so φ stays positive where
 * elu(x) = exp(x) - 1 would round to -1 and φ to 0 (below x ≈ -17 in float32). */
void la_feature_map_f32(la_feature_map fm, const float *x, float *out, size_t n)
{
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] : 0.0f;
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = x[i] >= 0 ? x[i] + 1.0f : expf(x[i]);
}

void la_feature_map_f64(la_feature_map fm, const double *x, double *out, size_t n)
{
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] : 0.0;
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = x[i] >= 0 ? x[i] + 1.0 : exp(x[i]);
}
