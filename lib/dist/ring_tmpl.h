/* ring_tmpl.h (dist) — ring softmax attention written once for float and double;
 * lib/dist/ring.c includes it after core/real_f32.h and after core/real_f64.h.
 *
 * Shapes, per rank (heads = B·H, n = this rank's slice, n_s = rank s's):
 *   q, k: (heads, n, d_k), v, out: (heads, n, d_v), row-major;
 *   a traveling slice: [K_s V_s] packed, (heads, n_s, d_k) then (heads, n_s, d_v);
 *   acc: (heads, n, d_v) and lse: (heads, n) in float64, the merged output so far. */

#define MPI_REAL_T (REAL_IS_F32 ? MPI_FLOAT : MPI_DOUBLE)

/* Merges one slice's (out_s, lse_s) into the running (acc, lse), row by row:
 *   L = log(e^lse + e^lse_s),  acc = acc · e^(lse − L) + out_s · e^(lse_s − L). */
static void FN(merge)(double *acc, double *lse, const REAL *out_s, const REAL *lse_s, size_t rows,
                      size_t dv)
{
    for (size_t i = 0; i < rows; i++) {
        const double ls = (double)lse_s[i], l = lse[i];
        if (ls == -INFINITY) continue; /* the slice shows this row no key */
        const double m = l > ls ? l : ls;
        const double L = m + log(exp(l - m) + exp(ls - m));
        const double a = exp(l - L), b = exp(ls - L);
        for (size_t c = 0; c < dv; c++)
            acc[i * dv + c] = acc[i * dv + c] * a + (double)out_s[i * dv + c] * b;
        lse[i] = L;
    }
}

static la_status FN(dist_softmax)(MPI_Comm comm, const la_problem *p, const REAL *q, const REAL *k,
                                  const REAL *v, REAL *out, la_dist_stats *stats)
{
    la_dist_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (comm == MPI_COMM_NULL) return LA_EINVAL;
    const double t0 = MPI_Wtime();
    dist_layout lay;
    la_status st = dist_check_local(comm, p, q, k, v, out);
    st = dist_agree(comm, p, REAL_DTYPE, DIST_SOFTMAX, 0, st, &lay, stats);
    if (st != LA_OK) return st;

    /* sizes: two slice buffers of the longest slice, this slice's output and lse in REAL
     * (one slice's result) and in float64 (the merged one) */
    const size_t heads = p->batch * p->heads, n = p->n_queries, dk = p->d_k, dv = p->d_v;
    const int P = lay.size, r = lay.rank;
    size_t slice = 0, rows = 0, outs = 0;
    bool ok = la_mul_ok(heads, lay.max_count, &rows) && la_mul_ok(rows, dk + dv, &slice) &&
              slice <= INT_MAX && la_mul_ok(heads * n, dv + 1, &outs);
    size_t real_elems = 2 * slice + outs; /* no overflow: each term below SIZE_MAX / 4 */
    ok = ok && slice < SIZE_MAX / 8 && outs < SIZE_MAX / 8;
    st = !ok                                                                        ? LA_EOVERFLOW
         : (real_elems * sizeof(REAL) + outs * sizeof(double)) > p->workspace_limit ? LA_EBUDGET
                                                                                    : LA_OK;
    REAL *bufs = NULL;
    double *acc = NULL;
    if (st == LA_OK) {
        bufs = malloc(real_elems * sizeof(REAL));
        acc = malloc(outs * sizeof(double));
        if (!bufs || !acc) st = LA_ENOMEM;
    }
    st = dist_agree_status(comm, st, stats);
    if (st != LA_OK) {
        free(bufs);
        free(acc);
        dist_layout_free(&lay);
        return st;
    }
    REAL *buf[2] = {bufs, bufs + slice}, *out_s = bufs + 2 * slice, *lse_s = out_s + heads * n * dv;
    double *lse = acc + heads * n * dv;
    for (size_t a = 0; a < heads * n * dv; a++)
        acc[a] = 0;
    for (size_t i = 0; i < heads * n; i++)
        lse[i] = -INFINITY;
    /* this rank's slice, packed [K V] */
    memcpy(buf[0], k, heads * n * dk * sizeof(REAL));
    memcpy(buf[0] + heads * n * dk, v, heads * n * dv * sizeof(REAL));

    /* P steps: at step t this rank holds rank s = r − t's slice; it sends it on to r + 1
     * and receives r − t − 1's from r − 1 while the kernel runs on the one in hand */
    la_status local = LA_OK;
    const int right = (r + 1) % P, left = (r + P - 1) % P;
    for (int t = 0; t < P; t++) {
        const int s = (r - t + P) % P, s_next = (r - t - 1 + 2 * P) % P;
        REAL *cur = buf[t % 2], *next = buf[(t + 1) % 2];
        MPI_Request req[2];
        const size_t ns = lay.counts[s], nn = lay.counts[s_next];
        if (t + 1 < P) {
            double tc = MPI_Wtime();
            MPI_Irecv(next, (int)(heads * nn * (dk + dv)), MPI_REAL_T, left, t, comm, &req[0]);
            MPI_Isend(cur, (int)(heads * ns * (dk + dv)), MPI_REAL_T, right, t, comm, &req[1]);
            stats->comm_seconds += MPI_Wtime() - tc;
            stats->bytes_sent += heads * ns * (dk + dv) * sizeof(REAL);
            stats->messages += 1;
        }
        /* causal: a slice of a later rank is wholly in the future; this rank's own slice
         * has the same global offset for queries and keys, so the top-left mask is the
         * global one; an earlier rank's slice is wholly visible */
        const bool skip = p->causal && s > r;
        if (!skip && local == LA_OK) {
            la_problem ps = *p;
            ps.n_keys = ns;
            ps.causal = p->causal && s == r;
            local = FN(la_softmax_attention_lse)(&ps, q, cur, cur + heads * ns * dk, out_s, lse_s);
            if (local == LA_OK) FN(merge)(acc, lse, out_s, lse_s, heads * n, dv);
        }
        if (t + 1 < P) {
            double tc = MPI_Wtime();
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            stats->comm_seconds += MPI_Wtime() - tc;
        }
    }
    /* a slice's kernel may have refused on some rank: agreed before anything is written */
    st = dist_agree_status(comm, local, stats);
    if (st == LA_OK)
        for (size_t a = 0; a < heads * n * dv; a++)
            out[a] = (REAL)acc[a];
    free(bufs);
    free(acc);
    dist_layout_free(&lay);
    stats->total_seconds = MPI_Wtime() - t0;
    return st;
}

#undef MPI_REAL_T
