/* mask_tmpl.h — the general masks (p->mask, p->key_mask) on a row of scores, written once
 * for both precisions: included by softmax.c and engine_portable.c, each compiled once per
 * precision (the scheme is in core/real_f32.h; no include guard on purpose). */

/* Scores srow[0..n) of query i of head hd (b·H + h) for the keys j0 .. j0+n-1: the ones
 * la_mask_hides hides become -inf. Returns the largest kept score, -inf when none is
 * kept (the row then adds nothing). */
static REAL FN(mask_scores)(const la_problem *p, size_t hd, size_t i, size_t j0, REAL *srow,
                            size_t n)
{
    REAL max = -INFINITY;
    for (size_t c = 0; c < n; c++) {
        if (la_mask_hides(p, hd, i, j0 + c))
            srow[c] = -INFINITY;
        else if (srow[c] > max)
            max = srow[c];
    }
    return max;
}

/* srow[c] <- exp(srow[c] − shift) over the kept entries, exactly 0 over the hidden (-inf)
 * ones (the vectorized exp clamps its argument, so it would give them a tiny weight), and
 * their sum. shift is finite (a kept score's maximum, or a row's log-sum-exp). */
static REAL FN(masked_exp_sum)(REAL *srow, size_t n, REAL shift)
{
    REAL sum = 0;
    for (size_t c = 0; c < n; c++) {
        const REAL e = srow[c] == -INFINITY ? 0 : EXP(srow[c] - shift);
        srow[c] = e;
        sum += e;
    }
    return sum;
}
