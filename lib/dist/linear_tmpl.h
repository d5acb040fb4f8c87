/* linear_tmpl.h (dist) — distributed linear attention written once for float and double;
 * lib/dist/linear.c includes it after core/real_f32.h and after core/real_f64.h.
 *
 * Shapes, per rank (heads = B·H, n = this rank's slice):
 *   q, k: (heads, n, d_k), v, out: (heads, n, d_v), row-major;
 *   states: (heads, d_k·(d_v + 1)), each head's S (d_k, d_v) row-major then z (d_k,). */

/* The MPI datatype of REAL. */
#define MPI_REAL_T (REAL_IS_F32 ? MPI_FLOAT : MPI_DOUBLE)

/* Scratch of one call: φ of one head's queries and keys, a chunk's scores and numerator. */
typedef struct {
    REAL *phi_q, *phi_k; /* (n, d_k) each */
    REAL *scores;        /* (chunk, chunk) */
    REAL *num;           /* (chunk, d_v) */
} FN(dist_scratch);

/* states (heads, d_k·(d_v + 1)) = this slice's [S_r z_r] per head:
 *   S_r = φ(K_r)ᵀ V_r (d_k, d_v),  z_r = Σ_j φ(k_j) (d_k). */
static void FN(local_states)(const la_problem *p, const REAL *k, const REAL *v, REAL *states,
                             FN(dist_scratch) * w, int threads)
{
    const size_t heads = p->batch * p->heads, n = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t ss = dk * (dv + 1);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t h = 0; h < heads; h++) {
        REAL *S = states + h * ss, *z = S + dk * dv, *phi_k = w[omp_get_thread_num()].phi_k;
        FN(la_feature_map)(p->feature_map, k + h * n * dk, phi_k, n * dk);
        /* S = φ(K)ᵀ V: (d_k, n)·(n, d_v), φ(K)ᵀ through strides */
        GEMM(dk, dv, n, 1, phi_k, 1, (ptrdiff_t)dk, v + h * n * dv, (ptrdiff_t)dv, 1, 0, S,
             (ptrdiff_t)dv, 1);
        /* z = Σ_j φ(k_j) */
        for (size_t a = 0; a < dk; a++)
            z[a] = 0;
        for (size_t j = 0; j < n; j++)
            for (size_t a = 0; a < dk; a++)
                z[a] += phi_k[j * dk + a];
    }
}

/* out rows (rows, d_v) = num / (den + eps), a zero row where the denominator is 0 (the
 * empty row, lib/linattn.h). num (rows, d_v) holds φ(q)ᵀS (+ the intra-chunk part). */
static void FN(normalize_rows)(const REAL *num, const REAL *den, REAL eps, REAL *y, size_t rows,
                               size_t dv)
{
    for (size_t i = 0; i < rows; i++) {
        const REAL d = den[i] + eps;
        for (size_t c = 0; c < dv; c++)
            y[i * dv + c] = d == 0 ? 0 : num[i * dv + c] / d;
    }
}

/* Non-causal: out = φ(Q) S / (φ(Q) z + eps) with the summed states of every rank,
 * a chunk of rows at a time (num and scores' first column as scratch). */
static void FN(apply_states)(const la_problem *p, const REAL *q, const REAL *states, REAL *out,
                             FN(dist_scratch) * ws, int threads)
{
    const size_t heads = p->batch * p->heads, n = p->n_queries, dk = p->d_k, dv = p->d_v;
    const size_t ss = dk * (dv + 1), cb = p->chunk;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t h = 0; h < heads; h++) {
        FN(dist_scratch) *w = &ws[omp_get_thread_num()];
        const REAL *S = states + h * ss, *z = S + dk * dv;
        FN(la_feature_map)(p->feature_map, q + h * n * dk, w->phi_q, n * dk);
        for (size_t i0 = 0; i0 < n; i0 += cb) {
            const size_t rows = n - i0 < cb ? n - i0 : cb;
            const REAL *pq = w->phi_q + i0 * dk;
            /* num = φ(Q_blk) S: (rows, d_k)·(d_k, d_v) */
            GEMM(rows, dv, dk, 1, pq, (ptrdiff_t)dk, 1, S, (ptrdiff_t)dv, 1, 0, w->num,
                 (ptrdiff_t)dv, 1);
            /* den = φ(Q_blk) z */
            for (size_t i = 0; i < rows; i++)
                w->scores[i] = FN(la_dot)(pq + i * dk, z, dk);
            FN(normalize_rows)(w->num, w->scores, (REAL)p->eps, out + (h * n + i0) * dv, rows, dv);
        }
    }
}

/* Causal: the chunked form on this slice, seeded with the state of the ranks before
 * (prefix, (heads, ss); updated in place chunk by chunk). For chunk C of rows:
 *   A = φ(Q_C) φ(K_C)ᵀ with A_ij = 0 for j > i          (rows × rows)
 *   num = φ(Q_C) S + A V_C,  den = φ(Q_C) z + Σ_j A_ij    (S, z: the tokens before C)
 *   y = num / (den + eps);  then S += φ(K_C)ᵀ V_C, z += Σ φ(K_C) rows. */
static void FN(causal_chunks)(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                              REAL *prefix, REAL *out, FN(dist_scratch) * ws, int threads)
{
    const size_t heads = p->batch * p->heads, n = p->n_queries, dk = p->d_k, dv = p->d_v;
    const size_t ss = dk * (dv + 1), cb = p->chunk;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t h = 0; h < heads; h++) {
        FN(dist_scratch) *w = &ws[omp_get_thread_num()];
        REAL *S = prefix + h * ss, *z = S + dk * dv;
        FN(la_feature_map)(p->feature_map, q + h * n * dk, w->phi_q, n * dk);
        FN(la_feature_map)(p->feature_map, k + h * n * dk, w->phi_k, n * dk);
        const REAL *vh = v + h * n * dv;
        for (size_t i0 = 0; i0 < n; i0 += cb) {
            const size_t rows = n - i0 < cb ? n - i0 : cb;
            const REAL *pq = w->phi_q + i0 * dk, *pk = w->phi_k + i0 * dk, *vc = vh + i0 * dv;
            REAL *A = w->scores, *d = w->num + cb * dv;
            /* A = φ(Q_C) φ(K_C)ᵀ, masked above the diagonal */
            GEMM(rows, rows, dk, 1, pq, (ptrdiff_t)dk, 1, pk, 1, (ptrdiff_t)dk, 0, A,
                 (ptrdiff_t)rows, 1);
            for (size_t i = 0; i < rows; i++)
                for (size_t j = i + 1; j < rows; j++)
                    A[i * rows + j] = 0;
            /* num = φ(Q_C) S + A V_C */
            GEMM(rows, dv, dk, 1, pq, (ptrdiff_t)dk, 1, S, (ptrdiff_t)dv, 1, 0, w->num,
                 (ptrdiff_t)dv, 1);
            GEMM(rows, dv, rows, 1, A, (ptrdiff_t)rows, 1, vc, (ptrdiff_t)dv, 1, 1, w->num,
                 (ptrdiff_t)dv, 1);
            /* den = φ(Q_C) z + Σ_j A_ij */
            for (size_t i = 0; i < rows; i++) {
                REAL s = FN(la_dot)(pq + i * dk, z, dk);
                for (size_t j = 0; j <= i; j++)
                    s += A[i * rows + j];
                d[i] = s;
            }
            FN(normalize_rows)(w->num, d, (REAL)p->eps, out + (h * n + i0) * dv, rows, dv);
            /* carry: S += φ(K_C)ᵀ V_C, z += Σ φ(K_C) */
            GEMM(dk, dv, rows, 1, pk, 1, (ptrdiff_t)dk, vc, (ptrdiff_t)dv, 1, 1, S, (ptrdiff_t)dv,
                 1);
            for (size_t j = 0; j < rows; j++)
                for (size_t a = 0; a < dk; a++)
                    z[a] += pk[j * dk + a];
        }
    }
}

/* The user-defined sum of MPI_Exscan: inout += in, element-wise, for either precision. */
static void FN(sum_op)(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const REAL *a = in;
    REAL *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* The range rules of lib/linattn.h ("Extreme values") over the whole sequence, agreed:
 * causal, with a, b, c the largest |q|, |k|, |v| on any rank (one MPI_Allreduce) and N
 * the whole length, LA_ERANGE when d_k·N·(a + 1)·(b + 1)·max(c, 1) > T/8 (an input that
 * is not finite passes, as in the library); non-causal, the summed [S z], the same on
 * every rank after the all-reduce, refused when an entry is not finite or d_k·|entry|
 * > T/8. */
static la_status FN(causal_range)(MPI_Comm comm, const la_problem *p, size_t total, const REAL *q,
                                  const REAL *k, const REAL *v, la_dist_stats *stats)
{
    const size_t heads = p->batch * p->heads, n = p->n_queries;
    double mine[3] = {FN(la_max_abs)(q, heads * n * p->d_k), FN(la_max_abs)(k, heads * n * p->d_k),
                      FN(la_max_abs)(v, heads * n * p->d_v)},
           all[3];
    MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, comm);
    stats->agree_bytes += sizeof mine;
    if (isinf(all[0]) || isinf(all[1]) || isinf(all[2])) return LA_OK;
    const long double limit = (long double)REAL_MAX / 8;
    const long double bound = (long double)p->d_k * (long double)total * ((long double)all[0] + 1) *
                              ((long double)all[1] + 1) * fmaxl((long double)all[2], 1);
    return bound <= limit ? LA_OK : LA_ERANGE;
}

static la_status FN(states_range)(const REAL *states, size_t count, size_t dk)
{
    double max = 0;
    for (size_t a = 0; a < count; a++) {
        const double x = fabs((double)states[a]);
        if (!(x <= DBL_MAX)) return LA_ERANGE; /* inf or NaN */
        max = x > max ? x : max;
    }
    return max * (double)dk <= (double)REAL_MAX / 8 ? LA_OK : LA_ERANGE;
}

static la_status FN(dist_linear)(MPI_Comm comm, const la_problem *p, la_dist_scan scan,
                                 const REAL *q, const REAL *k, const REAL *v, REAL *out,
                                 la_dist_stats *stats)
{
    la_dist_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (comm == MPI_COMM_NULL) return LA_EINVAL;
    const double t0 = MPI_Wtime();
    la_status st = dist_check_local(comm, p, q, k, v, out);
    if (st == LA_OK && p->causal && (unsigned)scan >= LA_DIST_SCAN_COUNT) st = LA_EINVAL;
    if (st == LA_OK && p->feature_map >= LA_FEATURE_COUNT) st = LA_EINVAL;
    const int use_scan = st == LA_OK && p->causal ? (int)scan : 0;
    dist_layout lay;
    st = dist_agree(comm, p, REAL_DTYPE, DIST_LINEAR, use_scan, st, &lay, stats);
    if (st != LA_OK) return st;

    /* sizes: states of every head; the allgather form holds every rank's */
    const size_t heads = p->batch * p->heads, n = p->n_queries, dk = p->d_k, dv = p->d_v;
    const size_t cb = p->chunk < n ? p->chunk : n;
    /* copies of the states: non-causal 1 (summed in place); exscan 2 (this slice's, the
     * prefix); allgather P + 1 (every rank's, the prefix) */
    const size_t copies = !p->causal ? 1 : scan == LA_DIST_EXSCAN ? 2 : (size_t)lay.size + 1;
    size_t ss = 0, count = 0;
    size_t state_elems = 0, phi = 0, total = 0;
    bool ok = la_mul_ok(dk, dv + 1, &ss) && la_mul_ok(heads, ss, &count) &&
              la_mul_ok(count, copies, &state_elems) && la_mul_ok(n, dk, &phi) && count <= INT_MAX;
    /* each thread's scratch: φ(Q), φ(K) of one head, a chunk's scores and numerator and
     * denominators; the heads are shared among the threads */
    const int threads = (size_t)la_threads() < heads ? la_threads() : (int)heads;
    size_t per = 0;
    ok = ok && phi < SIZE_MAX / 8 && cb * cb < SIZE_MAX / 8 && la_mul_ok(cb, dv + 1, &per);
    per = ok ? 2 * phi + cb * cb + per : 0;
    size_t scratch = 0;
    ok = ok && la_mul_ok(per, (size_t)threads, &scratch) &&
         state_elems <= SIZE_MAX / sizeof(REAL) - scratch;
    total = ok ? state_elems + scratch : 0;
    st = !ok ? LA_EOVERFLOW : total * sizeof(REAL) > p->workspace_limit ? LA_EBUDGET : LA_OK;
    REAL *work = NULL;
    FN(dist_scratch) *ws = NULL;
    if (st == LA_OK && la_gemm_reserve(threads) != LA_OK) st = LA_ENOMEM;
    if (st == LA_OK) {
        work = malloc(total * sizeof(REAL));
        ws = malloc((size_t)threads * sizeof *ws);
        if (!work || !ws) st = LA_ENOMEM;
    }
    st = dist_agree_status(comm, st, stats);
    if (st == LA_OK && p->causal) st = FN(causal_range)(comm, p, lay.total, q, k, v, stats);
    if (st != LA_OK) {
        free(work);
        free(ws);
        dist_layout_free(&lay);
        return st;
    }
    REAL *states = work; /* (copies, heads, ss) */
    for (int t = 0; t < threads; t++) {
        ws[t].phi_q = work + state_elems + (size_t)t * per;
        ws[t].phi_k = ws[t].phi_q + phi;
        ws[t].scores = ws[t].phi_k + phi;
        ws[t].num = ws[t].scores + cb * cb; /* (cb, d_v), then the chunk's denominators (cb) */
    }
    la_problem pl = *p;
    pl.chunk = cb;

    /* this slice's [S_r z_r] */
    REAL *mine = !p->causal               ? states
                 : scan == LA_DIST_EXSCAN ? states + count
                                          : states + (size_t)lay.rank * count;
    FN(local_states)(&pl, k, v, mine, ws, threads);
    const int c = (int)count;
    double tc = MPI_Wtime();
    if (!p->causal) {
        /* [S z] = Σ_r [S_r z_r] on every rank */
        MPI_Allreduce(MPI_IN_PLACE, states, c, MPI_REAL_T, MPI_SUM, comm);
    } else if (scan == LA_DIST_EXSCAN) {
        /* prefix = Σ_{s<r} [S_s z_s] (rank 0: zero; MPI leaves it undefined) */
        MPI_Op op;
        MPI_Op_create(FN(sum_op), 1, &op);
        MPI_Exscan(mine, states, c, MPI_REAL_T, op, comm);
        MPI_Op_free(&op);
        if (lay.rank == 0) memset(states, 0, count * sizeof(REAL));
    } else {
        /* LASP-2: every rank's [S_s z_s], then this rank's prefix in rank order */
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, states, c, MPI_REAL_T, comm);
    }
    stats->comm_seconds += MPI_Wtime() - tc;
    if (lay.size > 1) { /* one rank: MPI copies, nothing is sent */
        stats->bytes_sent += count * sizeof(REAL);
        stats->messages += 1;
    }

    if (!p->causal) {
        /* the summed states are the same on every rank: so is this verdict */
        const la_status range = FN(states_range)(states, count, dk);
        if (range != LA_OK) {
            free(work);
            free(ws);
            dist_layout_free(&lay);
            return range;
        }
        FN(apply_states)(&pl, q, states, out, ws, threads);
    } else {
        REAL *prefix = states;
        if (scan == LA_DIST_ALLGATHER) {
            prefix = states + (size_t)lay.size * count; /* the spare copy */
            memset(prefix, 0, count * sizeof(REAL));
            for (int s = 0; s < lay.rank; s++)
                for (size_t a = 0; a < count; a++)
                    prefix[a] += states[(size_t)s * count + a];
        }
        FN(causal_chunks)(&pl, q, k, v, prefix, out, ws, threads);
    }
    free(work);
    free(ws);
    dist_layout_free(&lay);
    stats->total_seconds = MPI_Wtime() - t0;
    return LA_OK;
}

#undef MPI_REAL_T
