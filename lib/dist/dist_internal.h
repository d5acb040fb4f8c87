/* dist_internal.h — shared by lib/dist/: the agreement every distributed kernel starts
 * with (shapes and statuses, one collective), the slice layout it yields, and the
 * counters of la_dist_stats. Compiled only with mpicc (make MPI=1). */
#ifndef LA_DIST_INTERNAL_H
#define LA_DIST_INTERNAL_H

#include "core/internal.h"
#include "linattn_mpi.h"

/* The slices every rank agreed on. */
typedef struct {
    int rank, size;
    size_t *counts;   /* (size,): tokens of every rank, owned (dist_layout_free) */
    size_t offset;    /* tokens before this rank */
    size_t total;     /* N, the whole sequence */
    size_t max_count; /* the longest slice */
} dist_layout;

/* Which kernel a rank is in: part of the agreement, so ranks in different calls refuse. */
enum { DIST_LINEAR = 1, DIST_SOFTMAX = 2 };

/* The first collective of every distributed kernel. `local` is this rank's verdict on its
 * own arguments (LA_OK, or why not); p may be NULL when local says so. One MPI_Allreduce
 * (max) over every rank's status and the min and max of each problem field, then, when
 * all are well and equal, one MPI_Allgather of the slice lengths into lay. Returns the
 * same status on every rank: the largest any rank reported, else LA_EINVAL when the
 * problems differ, else LA_OK with lay filled (free it with dist_layout_free). */
la_status dist_agree(MPI_Comm comm, const la_problem *p, la_dtype dtype, int kernel, int scan,
                     la_status local, dist_layout *lay, la_dist_stats *stats);
void dist_layout_free(dist_layout *lay);

/* A later agreement: every rank's status, the largest returned to all (MPI_Allreduce). */
la_status dist_agree_status(MPI_Comm comm, la_status local, la_dist_stats *stats);

/* The checks every kernel makes of its own arguments before agreeing. */
la_status dist_check_local(MPI_Comm comm, const la_problem *p, const void *q, const void *k,
                           const void *v, const void *out);

#endif
