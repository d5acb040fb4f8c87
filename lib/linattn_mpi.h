/* linattn_mpi.h — sequence-parallel attention over MPI: each rank of a communicator holds a
 * contiguous slice of the sequence, and the ranks together compute what one process
 * computes on the whole sequence (forward passes only).
 *
 * BUILD. Only with `make MPI=1` (or `make test` where mpicc exists): the kernels live in
 * lib/dist/, compiled with mpicc into build/liblinattn_mpi.a; link it before
 * build/liblinattn.a, with mpicc. Nothing in liblinattn.a or liblinattn.so depends on MPI.
 *
 * SLICES. The sequence of N tokens is split into P contiguous slices, rank r holding
 * tokens [o_r, o_r + n_r) of every head (uneven slices allowed, n_r >= 1, rank order is
 * sequence order). Each rank passes a problem describing its own slice:
 *   p->n_queries = p->n_keys = n_r (self-attention: the queries, keys and values of the
 *   same tokens), every other field equal on every rank, p->key_lengths NULL;
 *   q: (B,H,n_r,d_k), k: (B,H,n_r,d_k), v: (B,H,n_r,d_v), out: (B,H,n_r,d_v), row-major.
 * The ranks agree on the slice sizes with a collective (MPI_Allgather of n_r); out is
 * then rank r's rows of the single-process kernel's output on the whole sequence (the
 * causal mask in global positions), to rounding.
 *
 * ERRORS. Every function is collective over comm: every rank calls it with the same
 * comm. The ranks agree on one status with a collective before any communication that
 * could block (MPI_Allreduce of every rank's checks: a NULL pointer or bad problem on
 * one rank, or problems that differ between ranks, give LA_EINVAL on every rank), so
 * no rank is left waiting; a failure met later (LA_ERANGE from one slice's kernel)
 * still lets the ring finish and is agreed at the end. On error nothing is written to
 * out on any rank. MPI's own failures follow comm's error handler (by default MPI
 * aborts the job). comm == MPI_COMM_NULL is LA_EINVAL at once (there is no one to agree
 * with). THREADS: every kernel uses the library's threads (la_set_num_threads) on its
 * rank: the ring through the fused kernel on the slice in hand, the linear kernels over
 * the B·H heads (the same output whatever the thread count).
 *
 * BYTES. Every call fills an la_dist_stats (may be NULL): the bytes this rank handed to
 * MPI as send buffers of the data-moving calls (exact, counted by the code: for a
 * collective, this rank's contribution; what the MPI library forwards inside its
 * algorithm is not visible to it), the agreement messages apart, and the wall time
 * spent inside MPI's data-moving calls and waits. */
#ifndef LINATTN_MPI_H
#define LINATTN_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "linattn.h"

typedef struct {
    uint64_t bytes_sent;  /* send-buffer bytes of the data-moving calls (states, K/V slices) */
    uint64_t agree_bytes; /* send-buffer bytes of the agreement collectives (shapes, status) */
    uint64_t messages;    /* data-moving calls this rank made (a collective counts once) */
    double comm_seconds;  /* wall time inside the data-moving calls and their waits */
    double total_seconds; /* wall time of the whole call */
} la_dist_stats;

/* How causal linear attention forms the state of the tokens before this rank's slice. */
typedef enum {
    LA_DIST_EXSCAN = 0,    /* MPI_Exscan of (S_r, z_r) with a user-defined sum */
    LA_DIST_ALLGATHER = 1, /* LASP-2: one MPI_Allgather of every (S_r, z_r), each rank
                              sums the ranks before it, in rank order */
    LA_DIST_SCAN_COUNT
} la_dist_scan;

/* The even split of n tokens over size ranks: rank r gets n / size tokens, the first
 * n % size ranks one more; *offset its first token, *count its tokens. LA_EINVAL when
 * size < 1, rank outside [0, size), n < size (a rank would be empty) or NULL outputs. */
LA_API la_status la_dist_partition(size_t n, int size, int rank, size_t *offset, size_t *count);

/* Linear attention, distributed. Non-causal: each rank forms (S_r, z_r) = (φ(K_r)ᵀV_r,
 * Σ φ(k_j)) over its slice, one MPI_Allreduce sums them (H·B·d_k·(d_v + 1) numbers,
 * whatever N), and each rank applies S, z to its queries. Causal (p->causal): the state
 * of the ranks before, by `scan`, seeds the chunked causal form on the slice (chunks of
 * p->chunk tokens). `scan` is read only when causal. Returns LA_OK, LA_EINVAL,
 * LA_EOVERFLOW (a message above INT_MAX elements), LA_ENOMEM, LA_EBUDGET, LA_ERANGE (the
 * range rules of lib/linattn.h over the whole sequence: causal, d_k·N·(a + 1)·(b + 1)·
 * max(c, 1) > T/8 with a, b, c the largest |q|, |k|, |v| on any rank, agreed by one more
 * MPI_Allreduce; non-causal, the summed state checked as la_linear_attention_* checks
 * its own); agreed on every rank. The states travel in the element type.
 *   tests tests/mpi/test_dist.c */
LA_API la_status la_dist_linear_attention_f32(MPI_Comm comm, const la_problem *p, la_dist_scan scan,
                                              const float *q, const float *k, const float *v,
                                              float *out, la_dist_stats *stats);
LA_API la_status la_dist_linear_attention_f64(MPI_Comm comm, const la_problem *p, la_dist_scan scan,
                                              const double *q, const double *k, const double *v,
                                              double *out, la_dist_stats *stats);

/* Softmax attention, ring style: the K/V slices travel around the ring r -> r + 1 in
 * P − 1 steps (MPI_Isend/MPI_Irecv of the next slice overlapped with the fused kernel,
 * la_softmax_attention_lse_*, on the slice in hand), each slice's output merged into the
 * running one by its log-sum-exp (in float64). Causal: slices of later ranks are passed
 * on but not computed, this rank's own slice is computed with the causal mask. Each rank
 * sends (P − 1) · B·H·n_s·(d_k + d_v) elements in all. Returns LA_OK, LA_EINVAL,
 * LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE (a slice's kernel refused); agreed.
 *   tests tests/mpi/test_dist.c */
LA_API la_status la_dist_softmax_attention_f32(MPI_Comm comm, const la_problem *p, const float *q,
                                               const float *k, const float *v, float *out,
                                               la_dist_stats *stats);
LA_API la_status la_dist_softmax_attention_f64(MPI_Comm comm, const la_problem *p, const double *q,
                                               const double *k, const double *v, double *out,
                                               la_dist_stats *stats);

#endif
