/* engine_wide_ps_tmpl.h — the float32 wide tiles of engine_avx512.c (the task's queries in
 * the vector lanes), written once for two task sizes. The includer defines
 *   QT          queries per task: 32 or 64 (LA_FUSED_SIMD_Q_BLOCK, _LARGE);
 *   WIDE(name)  the name of each static function and type for that size;
 *   WIDE_TILES  the la_engine_tiles set they form;
 * and has defined KB, LOG2E, LN2 and max_abs_rows. Every name defined here is #undef'd at
 * the end. With QT = 64 (NV = 4 vectors of 16 queries, MT = 4 keys or value columns per
 * micro-tile) a step of the products issues 4 vector loads and 4 broadcasts for 16 FMAs,
 * against 2 + 8 with QT = 32: fewer loads per FMA for cores with two 512-bit FMA pipes,
 * twice the scratch (qᵀ, sᵀ, oᵀ) per task. Each query's sums run in the same order with
 * either size (the key blocks start at the same keys), so the outputs are the same bits,
 * except in a last task of at most LA_FUSED_SIMD_NARROW_ROWS queries, which the engine
 * runs on the narrow tiles (N = 100: 3·32 + 4 with 32, 64 + 36 with 64). */
#define NV (QT / 16) /* vectors of 16 queries */
#define MT (16 / NV) /* keys (scores) or value columns (PV) per micro-tile */
_Static_assert(QT % 16 == 0 && 16 % NV == 0, "QT: 16, 32 or 64 queries");

/* Scores of `keys` keys (MT, or 1 for a block's tail) for the task's QT queries:
 *   st[t][r] = Σ_p qt[p][r] · k[t][p] · scale2, t < keys, r < QT;
 *   qt: (d_k, QT), k: `keys` rows of d_k at stride ldk, st: (keys, QT).
 * MT·NV = 16 accumulators; per step NV vector loads and MT broadcasts for 16 FMAs. */
LA_AVX512 __attribute__((always_inline)) static inline void
WIDE(scores_ps)(const float *qt, const float *k, size_t dk, size_t ldk, __m512 scale2, float *st,
                int keys)
{
    __m512 acc[MT][NV];
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++)
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            acc[t][g] = _mm512_setzero_ps();
    for (size_t p = 0; p < dk; p++) {
        __m512 q[NV];
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            q[g] = _mm512_load_ps(qt + p * QT + 16 * g);
#pragma GCC unroll 16
        for (int t = 0; t < MT; t++) {
            if (t >= keys) break;
            const __m512 kb = _mm512_set1_ps(k[(size_t)t * ldk + p]);
#pragma GCC unroll 4
            for (int g = 0; g < NV; g++)
                acc[t][g] = _mm512_fmadd_ps(q[g], kb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++) {
        if (t >= keys) break;
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            _mm512_store_ps(st + t * QT + 16 * g, _mm512_mul_ps(acc[t][g], scale2));
    }
}

/* Values of `cols_v` columns (MT, or 1 for the tail of d_v) for the task's QT queries:
 *   ot[t][r] += Σ_j v[j][t] · pt[j][r], t < cols_v, j < keys,
 * the block's sum formed on its own and then added, so rounding grows with the block
 * (at most KB terms) and the number of blocks, not with all M keys in one chain;
 *   v: `keys` rows at stride ldv (already offset to the first column), pt: (keys, QT),
 *   ot: (cols_v, QT). */
LA_AVX512 __attribute__((always_inline)) static inline void
WIDE(values_ps)(const float *pt, size_t keys, const float *v, size_t ldv, float *ot, int cols_v)
{
    __m512 acc[MT][NV];
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++)
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            acc[t][g] = _mm512_setzero_ps();
    for (size_t j = 0; j < keys; j++) {
        __m512 pj[NV];
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            pj[g] = _mm512_load_ps(pt + j * QT + 16 * g);
        const float *vj = v + j * ldv;
#pragma GCC unroll 16
        for (int t = 0; t < MT; t++) {
            if (t >= cols_v) break;
            const __m512 vb = _mm512_set1_ps(vj[t]);
#pragma GCC unroll 4
            for (int g = 0; g < NV; g++)
                acc[t][g] = _mm512_fmadd_ps(pj[g], vb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++) {
        if (t >= cols_v) break;
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) {
            float *o = ot + t * QT + 16 * g;
            _mm512_store_ps(o, _mm512_add_ps(_mm512_load_ps(o), acc[t][g]));
        }
    }
}

/* ---------------------------------------------------------------- wide tasks */

/* A wide task's running statistics (in t->state): per lane the keys visible, [lo, hi)
 * (lanes past the last row copy the last row), the running maximum m (log2 units) and the
 * running sum l. */
typedef struct {
    __m512 m[NV], l[NV];
    __m512i lo[NV], hi[NV];
    size_t lo_max, hi_min;
    float *qt, *st, *ot;
} WIDE(wide_ps);
_Static_assert(sizeof(WIDE(wide_ps)) <= LA_ENGINE_STATE_BYTES, "the state fits");

/* qᵀ[p][r] = q[i0 + r][p] (q: rows of d_k at stride ldq), zero lanes past the last row;
 * oᵀ = 0; statistics zeroed. */
LA_AVX512 static void WIDE(wide_begin_ps)(la_engine_task *t)
{
    WIDE(wide_ps) *w = (WIDE(wide_ps) *)(void *)t->state;
    const la_problem *p = t->p;
    const size_t dk = p->d_k, dv = p->d_v, rows = t->rows, ldq = t->ldq;
    const float *qh = t->q;
    w->qt = (float *)(void *)t->scratch;
    w->st = w->qt + dk * QT;
    w->ot = w->st + KB * QT;
    if (t->kv_bits) { /* wide tasks read K and V once per QT queries: a plain scan */
        max_abs_rows(t->k, t->kv_hi, dk, t->ldk, &t->kv_bits[0]);
        max_abs_rows(t->v, t->kv_hi, dv, t->ldv, &t->kv_bits[1]);
    }
    for (size_t c = 0; c < dk; c++)
        for (size_t r = 0; r < QT; r++)
            w->qt[c * QT + r] = r < rows ? qh[(t->i0 + r) * ldq + c] : 0.0f;
    memset(w->ot, 0, dv * QT * sizeof *w->ot);
    int32_t lo[QT], hi[QT]; /* M <= INT32_MAX: la_fused_simd_usable() */
    w->lo_max = 0;
    w->hi_min = SIZE_MAX;
    for (size_t r = 0; r < QT; r++) {
        const size_t from = r < rows ? r : rows - 1;
        lo[r] = (int32_t)t->lo[from];
        hi[r] = (int32_t)t->hi[from];
        if (t->lo[from] > w->lo_max) w->lo_max = t->lo[from];
        if (t->hi[from] < w->hi_min) w->hi_min = t->hi[from];
    }
    for (int g = 0; g < NV; g++) {
        w->lo[g] = _mm512_loadu_si512(lo + 16 * g);
        w->hi[g] = _mm512_loadu_si512(hi + 16 * g);
        w->m[g] = _mm512_set1_ps(-INFINITY);
        w->l[g] = _mm512_setzero_ps();
    }
}

/* sᵀ = (k_blk · qᵀ) · scale2; k_blk: cols rows of d_k at stride ldk */
LA_AVX512 static void WIDE(wide_scores_ps)(la_engine_task *t, size_t j0, size_t cols)
{
    WIDE(wide_ps) *w = (WIDE(wide_ps) *)(void *)t->state;
    const size_t dk = t->p->d_k, ldk = t->ldk;
    const float *kb = (const float *)t->k + j0 * ldk;
    const __m512 scale2 = _mm512_set1_ps((float)(t->p->scale * LOG2E));
    size_t c = 0;
    for (; c + MT <= cols; c += MT)
        WIDE(scores_ps)(w->qt, kb + c * ldk, dk, ldk, scale2, w->st + c * QT, MT);
    for (; c < cols; c++)
        WIDE(scores_ps)(w->qt, kb + c * ldk, dk, ldk, scale2, w->st + c * QT, 1);
}

/* Hidden keys −inf (only in blocks that reach outside some lane's keys) and the block
 * maximum per lane; then the online softmax: new maxima, and where one grew, the sum and the
 * accumulator rescaled by 2^(m_old − m_new) (a lane that has seen no visible key keeps −inf
 * and shifts by 0 instead, so it never computes −inf − −inf); then pᵀ = 2^(sᵀ − m) in place
 * and the row sums: the block's own sum, then added (as in WIDE(values_ps), so the rounding does
 * not grow with M). */
LA_AVX512 static void WIDE(wide_softmax_ps)(la_engine_task *t, size_t j0, size_t cols)
{
    WIDE(wide_ps) *w = (WIDE(wide_ps) *)(void *)t->state;
    /* the running statistics in locals: the stores into sᵀ below may not alias them */
    float *const st = w->st;
    __m512i lo[NV], hi[NV];
    __m512 u[NV];
    for (int g = 0; g < NV; g++)
        lo[g] = w->lo[g], hi[g] = w->hi[g];
    const size_t dv = t->p->d_v;
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    const int masked = j0 < w->lo_max || j0 + cols > w->hi_min;
    __m512 bm[NV];
    for (int g = 0; g < NV; g++)
        bm[g] = neg_inf;
    for (size_t j = 0; j < cols; j++) {
        const __m512i jj = _mm512_set1_epi32((int32_t)(j0 + j));
        for (int g = 0; g < NV; g++) {
            float *sj = st + j * QT + 16 * g;
            __m512 sv = _mm512_load_ps(sj);
            if (masked) {
                const __mmask16 seen =
                    _mm512_cmpgt_epi32_mask(hi[g], jj) & _mm512_cmpge_epi32_mask(jj, lo[g]);
                sv = _mm512_mask_mov_ps(neg_inf, seen, sv);
                _mm512_store_ps(sj, sv);
            }
            bm[g] = _mm512_max_ps(bm[g], sv);
        }
    }

    __mmask16 grew = 0;
    for (int g = 0; g < NV; g++) {
        const __m512 n = _mm512_max_ps(w->m[g], bm[g]);
        grew |= _mm512_cmp_ps_mask(n, w->m[g], _CMP_GT_OQ);
        u[g] =
            _mm512_mask_mov_ps(_mm512_setzero_ps(), _mm512_cmp_ps_mask(n, neg_inf, _CMP_NEQ_OQ), n);
        bm[g] = n; /* the new maximum */
    }
    if (grew) {
        for (int g = 0; g < NV; g++) {
            const __m512 a = la_exp2_ps(_mm512_sub_ps(w->m[g], u[g]));
            w->l[g] = _mm512_mul_ps(w->l[g], a);
            if (j0 > t->key_lo) /* the first block found nothing to rescale */
                for (size_t c = 0; c < dv; c++) {
                    float *o = w->ot + c * QT + 16 * g;
                    _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), a));
                }
        }
    }
    for (int g = 0; g < NV; g++)
        w->m[g] = bm[g];

    for (int g = 0; g < NV; g++) {
        __m512 bs = _mm512_setzero_ps();
        for (size_t j = 0; j < cols; j++) {
            float *sj = st + j * QT + 16 * g;
            const __m512 e = la_exp2_ps(_mm512_sub_ps(_mm512_load_ps(sj), u[g]));
            _mm512_store_ps(sj, e);
            bs = _mm512_add_ps(bs, e);
        }
        w->l[g] = _mm512_add_ps(w->l[g], bs);
    }
}

/* oᵀ += v_blkᵀ · pᵀ; v_blk: cols rows of d_v at stride ldv */
LA_AVX512 static void WIDE(wide_values_ps)(la_engine_task *t, size_t j0, size_t cols)
{
    WIDE(wide_ps) *w = (WIDE(wide_ps) *)(void *)t->state;
    const size_t dv = t->p->d_v, ldv = t->ldv;
    const float *vb = (const float *)t->v + j0 * ldv;
    size_t c = 0;
    for (; c + MT <= dv; c += MT)
        WIDE(values_ps)(w->st, cols, vb + c, ldv, w->ot + c * QT, MT);
    for (; c < dv; c++)
        WIDE(values_ps)(w->st, cols, vb + c, ldv, w->ot + c * QT, 1);
}

/* out[i0 + r][c] = oᵀ[c][r] / l[r] (out: rows of d_v at stride ldo), a row that saw no key
 * stays zero; lse = (m + log2 l) · ln 2 (m and l are in log2 units), −inf where no key was
 * seen. */
LA_AVX512 static void WIDE(wide_finish_ps)(la_engine_task *t)
{
    WIDE(wide_ps) *w = (WIDE(wide_ps) *)(void *)t->state;
    const size_t dv = t->p->d_v, rows = t->rows, ldo = t->ldo;
    float inv[QT];
    for (int g = 0; g < NV; g++)
        _mm512_storeu_ps(inv + 16 * g, w->l[g]);
    for (size_t r = 0; r < rows; r++)
        inv[r] = inv[r] > 0 ? 1.0f / inv[r] : 0.0f;
    for (size_t r = 0; r < rows; r++) {
        float *orow = (float *)t->out + (t->i0 + r) * ldo;
        for (size_t c = 0; c < dv; c++)
            orow[c] = w->ot[c * QT + r] * inv[r];
    }
    if (t->lse) {
        float mx[QT], sum[QT], *lse = t->lse;
        for (int g = 0; g < NV; g++) {
            _mm512_storeu_ps(mx + 16 * g, w->m[g]);
            _mm512_storeu_ps(sum + 16 * g, w->l[g]);
        }
        for (size_t r = 0; r < rows; r++)
            lse[r] = sum[r] > 0 ? (mx[r] + log2f(sum[r])) * LN2 : -INFINITY;
    }
}

const la_engine_tiles WIDE_TILES = {WIDE(wide_begin_ps), WIDE(wide_scores_ps),
                                    WIDE(wide_softmax_ps), WIDE(wide_values_ps),
                                    WIDE(wide_finish_ps)};

#undef NV
#undef MT
#undef QT
#undef WIDE
#undef WIDE_TILES
