/* agree.c — how the ranks of a distributed kernel agree on the problem and on errors
 * before any communication that could block (dist_internal.h), and the even partition. */
#include "dist/dist_internal.h"

#include <stdlib.h>
#include <string.h>

la_status la_dist_partition(size_t n, int size, int rank, size_t *offset, size_t *count)
{
    if (size < 1 || rank < 0 || rank >= size || !offset || !count || n < (size_t)size)
        return LA_EINVAL;
    const size_t base = n / (size_t)size, extra = n % (size_t)size, r = (size_t)rank;
    *count = base + (r < extra ? 1 : 0);
    *offset = r * base + (r < extra ? r : extra);
    return LA_OK;
}

la_status dist_check_local(MPI_Comm comm, const la_problem *p, const void *q, const void *k,
                           const void *v, const void *out)
{
    (void)comm;
    if (!p || !q || !k || !v || !out) return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (p->key_lengths || p->n_queries != p->n_keys) return LA_EINVAL;
    return LA_OK;
}

/* The fields every rank's problem must share (the slice length n_queries apart). */
enum {
    F_STATUS,
    F_BATCH,
    F_HEADS,
    F_DK,
    F_DV,
    F_CAUSAL,
    F_FM,
    F_EPS,
    F_SCALE,
    F_CHUNK,
    F_DTYPE,
    F_KERNEL,
    F_SCAN,
    F_LIMIT,
    F_COUNT
};

la_status dist_agree(MPI_Comm comm, const la_problem *p, la_dtype dtype, int kernel, int scan,
                     la_status local, dist_layout *lay, la_dist_stats *stats)
{
    memset(lay, 0, sizeof *lay);
    MPI_Comm_rank(comm, &lay->rank);
    MPI_Comm_size(comm, &lay->size);
    uint64_t *counts = malloc((size_t)lay->size * sizeof *counts);
    if (!counts && local == LA_OK) local = LA_ENOMEM;

    /* [fields, ~fields]: one max gives every field's max and (complemented) min */
    uint64_t mine[2 * F_COUNT] = {0}, all[2 * F_COUNT];
    mine[F_STATUS] = (uint64_t)local;
    if (local == LA_OK) {
        mine[F_BATCH] = p->batch;
        mine[F_HEADS] = p->heads;
        mine[F_DK] = p->d_k;
        mine[F_DV] = p->d_v;
        mine[F_CAUSAL] = (uint64_t)p->causal;
        mine[F_FM] = (uint64_t)p->feature_map;
        memcpy(&mine[F_EPS], &p->eps, sizeof p->eps);
        memcpy(&mine[F_SCALE], &p->scale, sizeof p->scale);
        mine[F_CHUNK] = p->chunk;
        mine[F_LIMIT] = p->workspace_limit;
    }
    mine[F_DTYPE] = (uint64_t)dtype;
    mine[F_KERNEL] = (uint64_t)kernel;
    mine[F_SCAN] = (uint64_t)scan;
    for (int f = 0; f < F_COUNT; f++)
        mine[F_COUNT + f] = ~mine[f];
    mine[F_COUNT + F_STATUS] = 0; /* the status: only its max matters */
    MPI_Allreduce(mine, all, 2 * F_COUNT, MPI_UINT64_T, MPI_MAX, comm);
    stats->agree_bytes += sizeof mine;

    la_status st = (la_status)all[F_STATUS];
    for (int f = 1; f < F_COUNT && st == LA_OK; f++)
        if (all[f] != ~all[F_COUNT + f]) st = LA_EINVAL; /* max != min: the ranks differ */
    if (st != LA_OK) {
        free(counts);
        return st;
    }

    /* every rank's slice length: every rank holds the buffer (agreed above) */
    const uint64_t n = p->n_queries;
    MPI_Allgather(&n, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, comm);
    stats->agree_bytes += sizeof n;
    lay->counts = (size_t *)counts; /* size_t and uint64_t: the same width (checked below) */
    _Static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t is 64-bit");
    size_t total = 0;
    for (int r = 0; r < lay->size; r++) {
        if (r == lay->rank) lay->offset = total;
        if (lay->counts[r] > SIZE_MAX - total) st = LA_EOVERFLOW;
        total += lay->counts[r];
        if (lay->counts[r] > lay->max_count) lay->max_count = lay->counts[r];
    }
    lay->total = total;
    if (st != LA_OK) dist_layout_free(lay); /* the same verdict on every rank */
    return st;
}

void dist_layout_free(dist_layout *lay)
{
    free(lay->counts);
    lay->counts = NULL;
}

la_status dist_agree_status(MPI_Comm comm, la_status local, la_dist_stats *stats)
{
    int mine = (int)local, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, comm);
    stats->agree_bytes += sizeof mine;
    return (la_status)all;
}
