/* scores.c — `linattn scores`: why scaled dot-product attention divides by √d_k, measured.
 * For q, k with N(0, 1) entries, q·k has variance d_k, so the unscaled logits spread as
 * √d_k and the softmax saturates as d_k grows: each row puts nearly all its weight on one
 * key (entropy → 0) and the softmax's Jacobian, diag(a) − a aᵀ, vanishes with it (every
 * entry is a_j(1 − a_j) or −a_j a_l, all near 0 for a one-hot row), so almost no gradient
 * flows back through the scores. Scaled by 1/√d_k the logits keep unit variance at every
 * d_k. For each d_k, scaling (none: scale 1; sqrt: 1/√d_k) and seed, one row of
 * scores.csv: the logits' standard deviation, the attention weights' mean and
 * minimum row entropy against its maximum ln N, the Jacobian's largest entry (median, mean
 * and max over rows), and the mean largest weight. The weights come from the library
 * (la_attention_weights, the softmax kernel's row softmax, float64). */
#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn scores [--d LIST] [--n N] [--seeds S] [--seed S0] [--out PATH]\n"
    "                      [--resume]\n"
    "\n"
    "Why scaled dot-product attention divides the logits by sqrt(d_k): for q, k with\n"
    "N(0, 1) entries q·k has variance d_k, so unscaled (scale 1) the softmax saturates as\n"
    "d_k grows, its weights' entropy falls towards 0 and its Jacobian vanishes; scaled\n"
    "(scale 1/sqrt(d_k)) the logits keep unit variance. Per d_k, scaling and seed, on N\n"
    "queries and N keys drawn N(0, 1), the attention weights A = softmax(Q Kᵀ · scale)\n"
    "(la_attention_weights, float64) give:\n"
    "  logit_std            the standard deviation of the N² logits q·k · scale\n"
    "  entropy_mean_nats    the mean over rows of H_i = −Σ_j A_ij ln A_ij (nats)\n"
    "  entropy_min_nats     the smallest row entropy\n"
    "  entropy_max_nats     ln N, the entropy of uniform weights\n"
    "  grad_median, grad_mean, grad_max\n"
    "                       per row g_i = the largest |entry| of the softmax's Jacobian\n"
    "                       dA_i/ds_i = diag(a) − a aᵀ (a = A_i): max(max_j a_j(1 − a_j),\n"
    "                       max_{j≠l} a_j a_l), at most 1/4 (the largest gradient of any\n"
    "                       weight with respect to any logit of its row); its median, mean\n"
    "                       and max over rows. A saturated row (one weight near 1) has all\n"
    "                       of them near 0, and the median falls with the share of\n"
    "                       saturated rows\n"
    "  top_weight_mean      the mean over rows of max_j A_ij\n"
    "\n"
    "  --d LIST         head sizes d_k (default 4:1024; " SWEEP_SYNTAX ")\n"
    "  --n N            queries and keys per draw (default 256)\n"
    "  --seeds S        draws per point, seeds S0 .. S0 + S - 1 (default 5)\n"
    "  --seed S0        the first seed (default 1)\n"
    "  --out PATH       results file (CSV with a # metadata header; default\n"
    "                   scores.csv)\n"
    "  --resume         keep the points already in PATH, measure only the missing ones\n"
    "\n"
    "Columns: scaling,d_k,n,seed,logit_std,entropy_mean_nats,entropy_min_nats,\n"
    "entropy_max_nats,grad_median,grad_mean,grad_max,top_weight_mean,status. scaling is none "
    "(scale\n"
    "1) or sqrt (scale 1/sqrt(d_k)). Figure: linattn plot (plots/scores.gp).\n";

void cmd_scores_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] = "scaling,d_k,n,seed,logit_std,entropy_mean_nats,entropy_min_nats,"
                              "entropy_max_nats,grad_median,grad_mean,grad_max,top_weight_mean,"
                              "status";
enum { N_KEY = 4, MAX_D = 64 };
static const char *const scalings[2] = {"none", "sqrt"};

typedef struct {
    size_t d[MAX_D], n_d, n, seeds;
    uint64_t seed;
    const char *out;
    int resume;
} config;

static int parse(int argc, char **argv, config *c)
{
    const char *d = NULL, *n = NULL, *seeds = NULL, *seed = NULL;
    c->out = NULL, c->resume = 0;
    const cli_flag flags[] = {
        {"d", &d, NULL},       {"n", &n, NULL},        {"seeds", &seeds, NULL},
        {"seed", &seed, NULL}, {"out", &c->out, NULL}, {"resume", NULL, &c->resume},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->n = 256, c->seeds = 5, c->seed = 1;
    if ((rc = sweep_parse("--d", d ? d : "4:1024", 2, c->d, MAX_D, &c->n_d)) ||
        (n && (rc = sweep_parse_positive("--n", n, &c->n))) ||
        (seeds && (rc = sweep_parse_positive("--seeds", seeds, &c->seeds))))
        return rc;
    if (seed) {
        size_t s;
        if ((rc = cli_parse_size("--seed", seed, &s))) return rc;
        c->seed = (uint64_t)s;
    }
    if (c->seeds > 100) return cli_fail("--seeds", "at most 100");
    if (c->n > 4096) return cli_fail("--n", "at most 4096 (the N×N weights are held)");
    for (size_t i = 0; i < c->n_d; i++)
        if (c->d[i] > 16384) return cli_fail("--d", "%zu: at most 16384", c->d[i]);
    if (!c->out) c->out = "scores.csv";
    return 0;
}

/* What one draw gives (the columns after the key). */
typedef struct {
    double logit_std, entropy_mean, entropy_min, grad_median, grad_mean, grad_max, top_mean;
} measures;

/* The largest |entry| of diag(a) − a aᵀ over a row a of n weights: the largest
 * a_j(1 − a_j) on the diagonal, or the product of the two largest weights off it. */
static double jacobian_max(const double *a, size_t n)
{
    double diag = 0, first = 0, second = 0;
    for (size_t j = 0; j < n; j++) {
        const double d = a[j] * (1 - a[j]);
        if (d > diag) diag = d;
        if (a[j] > first)
            second = first, first = a[j];
        else if (a[j] > second)
            second = a[j];
    }
    return diag > first * second ? diag : first * second;
}

/* One draw: q, k (N, d_k) N(0, 1) from (seed, "scores"), the weights at scale, and what
 * they give. Returns 0, or 1 after one line. */
static int measure(const config *c, size_t dk, double scale, uint64_t seed, double *q, double *k,
                   double *a, double *g_rows, measures *m)
{
    const size_t n = c->n;
    inputs_rng r = inputs_rng_for(seed, "scores");
    for (size_t x = 0; x < n * dk; x++)
        q[x] = inputs_normal(&r);
    for (size_t x = 0; x < n * dk; x++)
        k[x] = inputs_normal(&r);
    la_problem p;
    la_problem_init(&p, 1, 1, n, n, dk, 1);
    p.scale = scale;
    la_status st = la_attention_weights(LA_KERNEL_SOFTMAX, &p, LA_FLOAT64, q, k, a);
    if (st != LA_OK) return cli_fail("scores", "attention weights: %s", la_strerror(st)), 1;
    /* the logits' spread, from the same q and k */
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t e = 0; e < dk; e++)
                s += q[i * dk + e] * k[j * dk + e];
            s *= scale;
            sum += s, sum2 += s * s;
        }
    const double count = (double)n * (double)n, mean = sum / count;
    m->logit_std = sqrt(fmax(sum2 / count - mean * mean, 0));
    m->entropy_mean = m->grad_mean = m->grad_max = m->top_mean = 0;
    m->entropy_min = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const double *row = a + i * n;
        double h = 0, top = 0;
        for (size_t j = 0; j < n; j++) {
            if (row[j] > 0) h -= row[j] * log(row[j]);
            if (row[j] > top) top = row[j];
        }
        const double g = g_rows[i] = jacobian_max(row, n);
        m->entropy_mean += h / (double)n;
        m->entropy_min = fmin(m->entropy_min, h);
        m->grad_mean += g / (double)n;
        m->grad_max = fmax(m->grad_max, g);
        m->top_mean += top / (double)n;
    }
    m->grad_median = timer_median(g_rows, n);
    return 0;
}

int cmd_scores(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    size_t dk_max = 0;
    for (size_t i = 0; i < c.n_d; i++)
        dk_max = c.d[i] > dk_max ? c.d[i] : dk_max;
    double *q = malloc(c.n * dk_max * sizeof *q), *k = malloc(c.n * dk_max * sizeof *k);
    double *a = malloc(c.n * c.n * sizeof *a), *g_rows = malloc(c.n * sizeof *g_rows);
    char err[512];
    record_file *f = NULL;
    if (!q || !k || !a || !g_rows) {
        rc = cli_fail("scores", "out of memory");
        goto done;
    }
    f = record_open(c.out, "scores",
                    "scaled against unscaled dot-product attention on N(0, 1) inputs: the "
                    "weights' entropy and the softmax Jacobian's largest entry against d_k",
                    COLUMNS, N_KEY, c.resume, argc, argv, err, sizeof err);
    if (!f) {
        rc = cli_fail("scores", "%s", err);
        goto done;
    }
    const int points = (int)(c.n_d * 2 * c.seeds);
    progress_line pr;
    progress_start(&pr, "scores", points, points);
    int point = 0;
    for (size_t di = 0; di < c.n_d && rc == 0; di++) {
        const size_t dk = c.d[di];
        for (int sc = 0; sc < 2 && rc == 0; sc++) {
            const double scale = sc ? 1 / sqrt((double)dk) : 1;
            for (size_t s = 0; s < c.seeds && rc == 0; s++) {
                const uint64_t seed = c.seed + s;
                char key[128], what[96];
                snprintf(key, sizeof key, "%s,%zu,%zu,%llu", scalings[sc], dk, c.n,
                         (unsigned long long)seed);
                snprintf(what, sizeof what, "%s d_k=%zu seed %llu", scalings[sc], dk,
                         (unsigned long long)seed);
                progress_step(&pr, ++point, 1, what);
                if (record_find(f, key)) continue;
                measures m;
                if ((rc = measure(&c, dk, scale, seed, q, k, a, g_rows, &m)) != 0) break;
                if (record_row(f, "%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,ok", key,
                               m.logit_std, m.entropy_mean, m.entropy_min, log((double)c.n),
                               m.grad_median, m.grad_mean, m.grad_max, m.top_mean) != 0) {
                    rc = cli_fail(c.out, "write failed");
                    break;
                }
            }
        }
    }
    progress_end(&pr);
    if (rc == 0) {
        /* the summary: per d_k and scaling, the mean over seeds of the entropy and of the
         * Jacobian's mean largest entry */
        printf("scores: N = %zu, %zu seeds; entropy in nats (max ln N = %.2f)\n", c.n, c.seeds,
               log((double)c.n));
        printf("  %6s  %-7s %10s %13s %12s %10s\n", "d_k", "scaling", "logit_std", "entropy_mean",
               "grad_median", "top_weight");
        for (size_t di = 0; di < c.n_d; di++)
            for (int sc = 0; sc < 2; sc++) {
                double sum[4] = {0};
                int count = 0;
                for (size_t s = 0; s < c.seeds; s++) {
                    char key[128];
                    snprintf(key, sizeof key, "%s,%zu,%zu,%llu", scalings[sc], c.d[di], c.n,
                             (unsigned long long)(c.seed + s));
                    const char *row = record_find(f, key);
                    double v[4];
                    if (!row || record_get(f, row, "logit_std", &v[0]) ||
                        record_get(f, row, "entropy_mean_nats", &v[1]) ||
                        record_get(f, row, "grad_median", &v[2]) ||
                        record_get(f, row, "top_weight_mean", &v[3]))
                        continue;
                    for (int x = 0; x < 4; x++)
                        sum[x] += v[x];
                    count++;
                }
                if (count)
                    printf("  %6zu  %-7s %10.3g %13.3g %12.3g %10.3g\n", c.d[di], scalings[sc],
                           sum[0] / count, sum[1] / count, sum[2] / count, sum[3] / count);
            }
        printf("scores: wrote %s\n", record_path(f));
    }
done:
    if (record_close(f) != 0 && rc == 0) rc = 1;
    free(q), free(k), free(a), free(g_rows);
    return rc;
}
