/* consumer.c — a program built the way a user builds against an installed linattn:
 *   cc consumer.c $(pkg-config --cflags --libs linattn)
 * It runs the fused softmax kernel on a small random problem, compares it with the
 * float64 reference through the registry, and exits 0 only when they agree.
 * scripts/check-install builds and runs it against `make install PREFIX=<tmp>`. */
#include <linattn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enum { N = 37, M = 53, D = 16 };
    static float q[N * D], k[M * D], v[M * D], out[N * D];
    static double qd[N * D], kd[M * D], vd[M * D], ref[N * D];
    uint64_t s = 12345;
    for (int i = 0; i < M * D; i++) {
        double x[3];
        for (int j = 0; j < 3; j++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            x[j] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        }
        if (i < N * D) q[i] = (float)x[0], qd[i] = q[i];
        k[i] = (float)x[1], kd[i] = k[i];
        v[i] = (float)x[2], vd[i] = v[i];
    }
    la_problem p;
    la_problem_init(&p, 1, 1, N, M, D, D);
    p.causal = 1;
    const la_kernel_info *row = la_kernel_get(LA_KERNEL_SOFTMAX);
    la_status st = row ? la_attention(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, q, k, v, out) : LA_EINVAL;
    if (st == LA_OK) st = la_ref_attention(LA_KERNEL_SOFTMAX, &p, qd, kd, vd, ref);
    if (st != LA_OK) {
        fprintf(stderr, "consumer: %s\n", la_strerror(st));
        return 1;
    }
    double num = 0, den = 0;
    for (int i = 0; i < N * D; i++) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    const double err = sqrt(num / den);
    printf("consumer: %s against its reference: relative error %.2e (linattn %s, %s)\n", row->name,
           err, LA_VERSION_STRING, la_config().simd);
    return err < 1e-5 ? 0 : 1; /* NaN fails too */
}
