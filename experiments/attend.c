/* attend.c — `linattn attend`: one attention kernel on .npy inputs, the output to .npy.
 *
 * Inputs Q (…, N, d_k), K (…, M, d_k), V (…, M, d_v) with the same leading dims, none,
 * (H,) or (B, H); the output is (…, N, d_v) in the chosen precision. Every malformed
 * input is refused with one line and exit status 2 before any output is written, and
 * the output appears atomically or not at all. */
#include "commands.h"
#include "common/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn attend --variant softmax|linear|hard --q Q.npy --k K.npy --v V.npy\n"
    "                      --out Y.npy [options]\n"
    "\n"
    "Runs one attention kernel on arrays from .npy files and writes the output.\n"
    "Q is (N, d_k), (H, N, d_k) or (B, H, N, d_k); K is (…, M, d_k) and V (…, M, d_v)\n"
    "with the same leading dims as Q. Inputs may be float32 or float64; they are\n"
    "converted to --precision. The output Y is (…, N, d_v) in that precision, written\n"
    "atomically (a temporary file, then rename): on any error no file appears.\n"
    "\n"
    "required:\n"
    "  --variant V          softmax: softmax(Q Kᵀ · scale) V\n"
    "                       hard:    the V row of the best-scoring visible key (ties: lowest)\n"
    "                       linear:  φ(q)ᵀ S / (φ(q)ᵀ z + eps), Katharopoulos et al. 2020\n"
    "  --q Q.npy, --k K.npy, --v V.npy   the inputs\n"
    "  --out Y.npy          the output\n"
    "\n"
    "options (default in brackets):\n"
    "  --causal             query i sees keys j <= i (top-left aligned when M != N) [off]\n"
    "  --key-lengths L.npy  int32/int64 of shape (B,), or (1,) for (N, d) and (H, N, d)\n"
    "                       inputs: keys j >= L[b] are hidden; each in [0, M] [none]\n"
    "                       (a query that sees no key gets a zero row)\n"
    "  --precision P        float32 or float64 [float32]\n"
    "  --threads T          OpenMP threads, T >= 1 [LA_NUM_THREADS, else all cores]\n"
    "  --scale S            softmax and hard only: logits = q·k · S [1/sqrt(d_k)]\n"
    "  --feature-map F      linear only: elu (φ = elu + 1) or relu [elu]\n"
    "  --eps E              linear only: E >= 0 in the denominator [1e-6]\n"
    "  --kernel K           softmax: fused (online softmax, no N×M matrix) or\n"
    "                       materialized (N×M scores) [fused];\n"
    "                       linear with --causal: chunked or recurrent [chunked]\n"
    "  --chunk C            linear --causal chunked: tokens per chunk, C >= 1 [32]\n"
    "\n"
    "exit status: 0 done, 2 bad flags or inputs (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "example:\n"
    "  linattn attend --variant linear --causal --q q.npy --k k.npy --v v.npy \\\n"
    "      --out y.npy --precision float64\n";

void cmd_attend_help(FILE *out)
{
    fputs(help_text, out);
}

enum { VARIANT_SOFTMAX, VARIANT_LINEAR, VARIANT_HARD };
static const char *const variant_names[] = {"softmax", "linear", "hard", NULL};
static const char *const precision_names[] = {"float32", "float64", NULL};
static const char *const softmax_kernels[] = {"fused", "materialized", NULL};
static const char *const linear_kernels[] = {"chunked", "recurrent", NULL};

/* The flags' texts, as given (NULL when absent). */
typedef struct {
    const char *variant, *q, *k, *v, *out, *key_lengths, *precision, *threads, *scale, *feature_map,
        *eps, *kernel, *chunk;
    int causal;
} attend_args;

/* The kernel and the problem's knobs from the flags, each checked against the variant. */
static int choose_kernel(const attend_args *a, int variant, la_kernel *kernel)
{
    int choice = 0, rc;
    switch (variant) {
    case VARIANT_SOFTMAX:
        if (a->kernel && (rc = cli_parse_choice("--kernel", a->kernel, softmax_kernels, &choice)))
            return rc;
        *kernel = choice == 0 ? LA_KERNEL_SOFTMAX : LA_KERNEL_SOFTMAX_MATERIALIZED;
        break;
    case VARIANT_HARD:
        if (a->kernel) return cli_fail("--kernel", "--variant hard has a single kernel");
        *kernel = LA_KERNEL_HARD;
        break;
    default:
        if (a->kernel && !a->causal)
            return cli_fail("--kernel", "applies to --variant linear with --causal only");
        if (a->kernel && (rc = cli_parse_choice("--kernel", a->kernel, linear_kernels, &choice)))
            return rc;
        *kernel = choice == 0 ? LA_KERNEL_LINEAR : LA_KERNEL_LINEAR_RECURRENT;
        break;
    }
    if (a->chunk && !(variant == VARIANT_LINEAR && a->causal && *kernel == LA_KERNEL_LINEAR))
        return cli_fail("--chunk", "applies to --variant linear --causal (chunked) only");
    if (a->scale && variant == VARIANT_LINEAR)
        return cli_fail("--scale", "applies to softmax and hard only (linear attention does "
                                   "not scale q·k)");
    if (a->eps && variant != VARIANT_LINEAR)
        return cli_fail("--eps", "applies to --variant linear only");
    if (a->feature_map && variant != VARIANT_LINEAR)
        return cli_fail("--feature-map", "applies to --variant linear only");
    return 0;
}

/* Q, K, V agree: same rank 2..4, same leading dims, shared d_k and M, no zero sizes. */
static int check_shapes(const attend_args *a, const la_array *q, const la_array *k,
                        const la_array *v)
{
    char s1[160], s2[160];
    const char *paths[] = {a->q, a->k, a->v};
    const la_array *arrays[] = {q, k, v};
    if (q->ndim < 2 || q->ndim > 4)
        return cli_fail(a->q, "shape %s must be (N, d), (H, N, d) or (B, H, N, d)",
                        cli_shape_str(q, s1, sizeof s1));
    for (int i = 1; i < 3; i++) {
        if (arrays[i]->ndim != q->ndim)
            return cli_fail(paths[i], "shape %s has %d dims, Q %s has %d",
                            cli_shape_str(arrays[i], s1, sizeof s1), arrays[i]->ndim,
                            cli_shape_str(q, s2, sizeof s2), q->ndim);
        for (int d = 0; d < q->ndim - 2; d++)
            if (arrays[i]->shape[d] != q->shape[d])
                return cli_fail(paths[i], "leading dims of %s differ from Q's %s",
                                cli_shape_str(arrays[i], s1, sizeof s1),
                                cli_shape_str(q, s2, sizeof s2));
    }
    int r = q->ndim - 2, c = q->ndim - 1; /* rows and columns */
    if (k->shape[c] != q->shape[c])
        return cli_fail(a->k, "d_k = %zu differs from Q's d_k = %zu", k->shape[c], q->shape[c]);
    if (v->shape[r] != k->shape[r])
        return cli_fail(a->v, "has %zu rows (keys), K has %zu", v->shape[r], k->shape[r]);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < q->ndim; d++)
            if (arrays[i]->shape[d] == 0)
                return cli_fail(paths[i], "shape %s has a zero dimension",
                                cli_shape_str(arrays[i], s1, sizeof s1));
    return 0;
}

/* key lengths: integers, shape (B,), each in [0, M]; converted to int64 in *out. */
static int read_key_lengths(const char *path, size_t batch, size_t n_keys, int64_t **out)
{
    la_array l;
    char s1[160];
    int rc = cli_read_npy(path, &l);
    if (rc) return rc;
    if (l.dtype != LA_NPY_I32 && l.dtype != LA_NPY_I64) {
        rc = cli_fail(path, "dtype %s, need int32 or int64", cli_dtype_name(l.dtype));
        goto done;
    }
    if (l.ndim != 1 || l.shape[0] != batch) {
        rc = cli_fail(path, "shape %s must be (B,) = (%zu,)", cli_shape_str(&l, s1, sizeof s1),
                      batch);
        goto done;
    }
    int64_t *lengths = malloc(batch * sizeof *lengths);
    if (!lengths) {
        rc = cli_fail(path, "out of memory");
        goto done;
    }
    for (size_t b = 0; b < batch; b++) {
        lengths[b] = l.dtype == LA_NPY_I32 ? ((int32_t *)l.data)[b] : ((int64_t *)l.data)[b];
        if (lengths[b] < 0 || (uint64_t)lengths[b] > n_keys) {
            rc = cli_fail(path, "key length %lld at index %zu is outside [0, %zu]",
                          (long long)lengths[b], b, n_keys);
            free(lengths);
            goto done;
        }
    }
    *out = lengths;
done:
    la_array_free(&l);
    return rc;
}

int cmd_attend(int argc, char **argv)
{
    attend_args a;
    memset(&a, 0, sizeof a);
    const cli_flag flags[] = {
        {"variant", &a.variant, NULL},
        {"q", &a.q, NULL},
        {"k", &a.k, NULL},
        {"v", &a.v, NULL},
        {"out", &a.out, NULL},
        {"causal", NULL, &a.causal},
        {"key-lengths", &a.key_lengths, NULL},
        {"precision", &a.precision, NULL},
        {"threads", &a.threads, NULL},
        {"scale", &a.scale, NULL},
        {"feature-map", &a.feature_map, NULL},
        {"eps", &a.eps, NULL},
        {"kernel", &a.kernel, NULL},
        {"chunk", &a.chunk, NULL},
        {NULL, NULL, NULL},
    };
    la_array q = {0}, k = {0}, v = {0}, y = {0};
    int64_t *key_lengths = NULL;
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    /* step 1: the flags, all checked before any file is read */
    const char *required[][2] = {
        {"--variant", a.variant}, {"--q", a.q}, {"--k", a.k}, {"--v", a.v}, {"--out", a.out}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i][1])
            return cli_fail(required[i][0], "required flag is missing (see linattn help attend)");
    int variant, precision = 0, threads = 0;
    la_kernel kernel = LA_KERNEL_SOFTMAX;
    double scale = 0, eps = LA_DEFAULT_EPS;
    size_t chunk = LA_DEFAULT_CHUNK;
    la_feature_map fm = LA_FEATURE_ELU1;
    if ((rc = cli_parse_choice("--variant", a.variant, variant_names, &variant))) return rc;
    if ((rc = choose_kernel(&a, variant, &kernel))) return rc;
    if (a.precision &&
        (rc = cli_parse_choice("--precision", a.precision, precision_names, &precision)))
        return rc;
    if (a.threads && (rc = cli_parse_int("--threads", a.threads, &threads))) return rc;
    if (a.threads && threads < 1) return cli_fail("--threads", "must be at least 1");
    if (a.scale && (rc = cli_parse_double("--scale", a.scale, &scale))) return rc;
    if (a.eps && (rc = cli_parse_double("--eps", a.eps, &eps))) return rc;
    if (eps < 0) return cli_fail("--eps", "must be >= 0");
    if (a.chunk && (rc = cli_parse_size("--chunk", a.chunk, &chunk))) return rc;
    if (chunk < 1) return cli_fail("--chunk", "must be at least 1");
    if (a.feature_map && la_feature_map_parse(a.feature_map, &fm) != LA_OK)
        return cli_fail("--feature-map", "'%s' is not one of elu, relu", a.feature_map);
    if (kernel == LA_KERNEL_LINEAR_RECURRENT && !a.causal)
        return cli_fail("--kernel", "recurrent needs --causal");
    la_dtype dtype = precision == 0 ? LA_FLOAT32 : LA_FLOAT64;

    /* step 2: the inputs, converted to the precision, and their shapes */
    if ((rc = cli_read_floats(a.q, dtype, &q)) || (rc = cli_read_floats(a.k, dtype, &k)) ||
        (rc = cli_read_floats(a.v, dtype, &v)) || (rc = check_shapes(&a, &q, &k, &v)))
        goto done;
    int nd = q.ndim;
    size_t batch = nd == 4 ? q.shape[0] : 1, heads = nd >= 3 ? q.shape[nd - 3] : 1;
    size_t n = q.shape[nd - 2], d_k = q.shape[nd - 1], m = k.shape[nd - 2], d_v = v.shape[nd - 1];
    if (a.key_lengths && (rc = read_key_lengths(a.key_lengths, batch, m, &key_lengths))) goto done;

    /* step 3: the problem */
    la_problem p;
    la_problem_init(&p, batch, heads, n, m, d_k, d_v);
    p.causal = a.causal;
    p.key_lengths = key_lengths;
    if (a.scale) p.scale = scale;
    p.feature_map = fm;
    p.eps = eps;
    p.chunk = chunk;
    la_status st = la_problem_check(&p);
    if (st != LA_OK) {
        rc = cli_fail("attend", "%s", la_strerror(st));
        goto done;
    }
    if (a.threads && la_set_num_threads(threads) != LA_OK) {
        rc = cli_fail("--threads", "'%s' is not accepted", a.threads);
        goto done;
    }

    /* step 4: the output (…, N, d_v), same leading dims as Q, and the kernel */
    y.dtype = q.dtype;
    y.ndim = nd;
    memcpy(y.shape, q.shape, sizeof y.shape);
    y.shape[nd - 1] = d_v;
    y.count = batch * heads * n * d_v; /* fits: la_problem_check checked it */
    y.data = malloc(y.count * la_npy_dtype_size(y.dtype));
    if (!y.data) {
        rc = cli_fail("attend", "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    if (dtype == LA_FLOAT32)
        st = la_attention_f32(kernel, &p, q.data, k.data, v.data, y.data);
    else
        st = la_attention_f64(kernel, &p, q.data, k.data, v.data, y.data);
    if (st != LA_OK) {
        rc = cli_fail("attend", "%s", la_strerror(st));
        goto done;
    }

    /* step 5: written atomically */
    rc = cli_write_npy(a.out, &y);
done:
    la_array_free(&q);
    la_array_free(&k);
    la_array_free(&v);
    la_array_free(&y);
    free(key_lengths);
    return rc;
}
