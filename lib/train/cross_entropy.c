/* cross_entropy.c — softmax cross-entropy over the vocabulary, forward and backward fused
 * in one pass per row, per element type (train_layers.h). Shapes:
 *   logits (rows, V), replaced by their gradient; targets (rows) int32, < 0: not scored
 *   row r scored: m = max l, s = Σ_j exp(l_j − m) (double), loss_r = m + ln s − l_t,
 *                 grad_j = (exp(l_j − m)/s − [j = t]) · scale; correct when the first
 *                 largest logit is l_t
 *   row r not scored: grad = 0, no loss
 * Rows in parallel, each row's loss kept, then summed in row order on one thread. */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static la_status cross_entropy(size_t rows, size_t vocab, REAL *logits, const int32_t *targets,
                               double scale, double *loss_sum, size_t *correct, size_t *scored)
{
    size_t n;
    if (!logits || !targets || !loss_sum || !correct || !scored || rows == 0 || vocab == 0 ||
        !isfinite(scale))
        return LA_EINVAL;
    if (!la_mul_ok(rows, vocab, &n) || !la_mul_ok(n, sizeof(REAL), &n) ||
        rows > SIZE_MAX / (sizeof(double) + 1))
        return LA_EOVERFLOW;
    for (size_t r = 0; r < rows; r++)
        if (targets[r] >= 0 && (size_t)targets[r] >= vocab) return LA_EINVAL;
    double *loss = malloc(rows * (sizeof *loss + 1));
    if (!loss) return LA_ENOMEM;
    unsigned char *hit = (unsigned char *)(loss + rows);
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 65536)
    for (size_t r = 0; r < rows; r++) {
        REAL *l = logits + r * vocab;
        const int32_t t = targets[r];
        loss[r] = 0;
        hit[r] = 0;
        if (t < 0) {
            memset(l, 0, vocab * sizeof *l);
            continue;
        }
        size_t arg = 0;
        for (size_t j = 1; j < vocab; j++)
            if (l[j] > l[arg]) arg = j;
        const double m = (double)l[arg], lt = (double)l[t];
        double s = 0;
        for (size_t j = 0; j < vocab; j++)
            s += exp((double)l[j] - m);
        for (size_t j = 0; j < vocab; j++)
            l[j] = (REAL)((exp((double)l[j] - m) / s - (j == (size_t)t)) * scale);
        loss[r] = m - lt + log(s);
        hit[r] = arg == (size_t)t;
    }
    double sum = 0;
    size_t right = 0, count = 0;
    for (size_t r = 0; r < rows; r++) {
        sum += loss[r];
        right += hit[r];
        count += targets[r] >= 0;
    }
    free(loss);
    *loss_sum = sum;
    *correct = right;
    *scored = count;
    return LA_OK;
}

#if REAL_IS_F32
la_status la_train_cross_entropy_f32(size_t rows, size_t vocab, float *logits,
                                     const int32_t *targets, double scale, double *loss_sum,
                                     size_t *correct, size_t *scored)
{
    return cross_entropy(rows, vocab, logits, targets, scale, loss_sum, correct, scored);
}
#else
la_status la_train_cross_entropy_f64(size_t rows, size_t vocab, double *logits,
                                     const int32_t *targets, double scale, double *loss_sum,
                                     size_t *correct, size_t *scored)
{
    return cross_entropy(rows, vocab, logits, targets, scale, loss_sum, correct, scored);
}
#endif
