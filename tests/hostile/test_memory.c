/* test_memory.c — the library under a memory limit: every call returns LA_OK or
 * LA_ENOMEM, prints nothing, does not abort, and leaves its output untouched when it
 * returns LA_ENOMEM. BLIS's packing buffers were the hole: they are allocated inside a
 * product, and BLIS prints three lines and aborts when malloc fails there (now the
 * kernels reserve them up front, la_gemm_reserve in lib/cpu/gemm.c).
 * Each case runs in a child process whose stdout and stderr go to a pipe: the inputs
 * are made and OpenMP's threads started first, then RLIMIT_AS is set a little above the
 * address space in use, so that a BLIS packing buffer (megabytes) cannot be mapped, and
 * the call is made. AddressSanitizer reserves terabytes of address space, so under
 * SANITIZE=1 the cases are skipped (and say so). */
#include "../testutil.h"
#include "attention/kernels.h"
#include "core/sanitizer.h"
#include "cpu/machine.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bytes of address space left to the call: too little for BLIS's packing buffers (a
 * block of B is 16 MiB on zen3's block sizes), then enough for them and the products. */
static const size_t HEADROOMS[] = {2 << 20, 96 << 20};
static size_t headroom;
static const float SENTINEL = 1234.5f; /* what the output holds before the call */

enum {
    EXIT_OK = 0,
    EXIT_ENOMEM = 1,
    EXIT_TOUCHED = 2,
    EXIT_OTHER = 3,
    EXIT_SETUP = 4,
    EXIT_NO_LIMIT = 5 /* the limit is not enforced (qemu-user ignores RLIMIT_AS) */
};

static float *filled(size_t n, float value)
{
    float *x = malloc(n * sizeof(float));
    if (!x) _exit(EXIT_SETUP);
    for (size_t i = 0; i < n; i++)
        x[i] = value * (float)((i % 7) + 1) / 8;
    return x;
}

/* Start OpenMP's threads (and their malloc arenas) before the limit: the test is about
 * what the library allocates, not about thread creation. Then the limit. */
static void limit_memory(void)
{
    int threads = la_get_num_threads();
#pragma omp parallel num_threads(threads)
    {
        void *volatile m = malloc(64);
        free(m);
    }
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(EXIT_SETUP);
    fclose(f);
    struct rlimit r;
    r.rlim_cur = r.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + headroom;
    if (setrlimit(RLIMIT_AS, &r) != 0) _exit(EXIT_SETUP);
    void *volatile beyond = malloc(headroom + (64 << 20));
    if (beyond) _exit(EXIT_NO_LIMIT);
}

typedef enum { SOFTMAX_MAT, SOFTMAX_F64, LINEAR, FFN, MHA, ENCODER, SGEMM, N_CASES } which;
static const char *const names[N_CASES] = {"la_softmax_attention_materialized_f32",
                                           "la_softmax_attention_f64",
                                           "la_linear_attention_f32",
                                           "la_ffn",
                                           "la_mha",
                                           "la_encoder_layer",
                                           "la_blis_sgemm"};

/* In the child: one call under the limit; the exit status says how it went. */
static int run_case(which w)
{
    const size_t B = 1, H = 2, N = 512, dk = 64, D = 128, F = 256;
    la_problem p;
    la_problem_init(&p, B, H, N, N, dk, dk);
    la_layer_config c;
    la_layer_config_init(&c, D, 2, F);
    const size_t S = 1024; /* la_blis_sgemm's m = n = k */
    const size_t n_qkv = B * H * N * dk, n_x = w == SGEMM ? S * S : B * N * D;
    size_t n_out = 0;
    float *out = NULL;
    la_status st = LA_OK;
    if (w == SOFTMAX_F64) {
        double *q = malloc(n_qkv * sizeof(double)), *o = malloc(n_qkv * sizeof(double));
        if (!q || !o) _exit(EXIT_SETUP);
        for (size_t i = 0; i < n_qkv; i++)
            q[i] = (double)(i % 13) / 13, o[i] = SENTINEL;
        limit_memory();
        st = la_softmax_attention_f64(&p, q, q, q, o);
        if (st == LA_ENOMEM)
            for (size_t i = 0; i < n_qkv; i++)
                if (o[i] != SENTINEL) return EXIT_TOUCHED;
        return st == LA_OK ? EXIT_OK : st == LA_ENOMEM ? EXIT_ENOMEM : EXIT_OTHER;
    }
    la_layer_weights lw;
    if (w == ENCODER && la_layer_weights_init(&lw, LA_FLOAT32, D, F, 0, 7) != LA_OK)
        _exit(EXIT_SETUP);
    float *a = filled(n_x > n_qkv ? n_x : n_qkv, 0.5f), *wts = filled(3 * D * D + D * F, 0.1f);
    n_out = n_x > n_qkv ? n_x : n_qkv;
    out = filled(n_out, 0);
    for (size_t i = 0; i < n_out; i++)
        out[i] = SENTINEL;
    limit_memory();
    switch (w) {
    case SOFTMAX_MAT: st = la_softmax_attention_materialized_f32(&p, a, a, a, out); break;
    case LINEAR: st = la_linear_attention_f32(&p, a, a, a, out); break;
    case FFN: st = la_ffn(&c, LA_FLOAT32, B * N, a, wts, wts, wts, wts, out); break;
    case MHA: st = la_mha(&c, LA_FLOAT32, B, N, N, a, a, 0, NULL, wts, wts, wts, wts, out); break;
    case ENCODER: st = la_encoder_layer(&c, &lw, LA_FLOAT32, B, N, a, 0, NULL, out); break;
    case SGEMM: /* large enough for BLIS's packed path (small products skip packing) */
        st = la_blis_sgemm(la_get_num_threads(), S, S, S, 1, a, (ptrdiff_t)S, 1, a, (ptrdiff_t)S, 1,
                           0, out, (ptrdiff_t)S, 1);
        break;
    default: break;
    }
    if (st == LA_ENOMEM)
        for (size_t i = 0; i < n_out; i++)
            if (out[i] != SENTINEL) return EXIT_TOUCHED;
    return st == LA_OK ? EXIT_OK : st == LA_ENOMEM ? EXIT_ENOMEM : EXIT_OTHER;
}

static void test_calls_under_memory_limit(void **state)
{
    (void)state;
    if (LA_UNDER_ASAN) {
        printf("skipped: AddressSanitizer reserves more address space than any limit allows\n");
        skip();
    }
    int enomem = 0, ok = 0;
    for (int i = 0; i < 2 * N_CASES; i++) {
        const int w = i % N_CASES;
        headroom = HEADROOMS[i / N_CASES];
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            dup2(fds[1], 1);
            dup2(fds[1], 2);
            int code = run_case((which)w);
            fflush(NULL);
            _exit(code);
        }
        close(fds[1]);
        char said[512];
        size_t len = 0;
        ssize_t got;
        while ((got = read(fds[0], said + len, sizeof said - 1 - len)) > 0)
            len += (size_t)got;
        said[len] = '\0';
        close(fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status))
            fail_msg("%s under a memory limit: killed by signal %d, having printed \"%s\"",
                     names[w], WIFSIGNALED(status) ? WTERMSIG(status) : -1, said);
        const int code = WEXITSTATUS(status);
        if (code == EXIT_NO_LIMIT) {
            printf("skipped: RLIMIT_AS is not enforced here (qemu-user ignores it)\n");
            skip();
        }
        printf("%s, %zu MiB left: %s\n", names[w], headroom >> 20,
               code == EXIT_OK       ? "LA_OK"
               : code == EXIT_ENOMEM ? "LA_ENOMEM, output untouched"
                                     : "wrong");
        if (len > 0) fail_msg("%s under a memory limit printed \"%s\"", names[w], said);
        if (code == EXIT_TOUCHED) fail_msg("%s returned LA_ENOMEM but wrote its output", names[w]);
        if (code == EXIT_OTHER) fail_msg("%s returned neither LA_OK nor LA_ENOMEM", names[w]);
        if (code == EXIT_SETUP) fail_msg("%s: the case could not be set up", names[w]);
        assert_true(code == EXIT_OK || code == EXIT_ENOMEM);
        enomem += code == EXIT_ENOMEM;
        ok += code == EXIT_OK;
    }
    /* the tight limit must bite and the loose one let calls through, or this test
     * proves nothing */
    assert_true(enomem > 0);
    assert_true(ok > 0);
}

int main(void)
{
    tu_init("test_memory");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_under_memory_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
