/* plot_gnuplot.c — gnuplot run on a figure: the -e assignments, the scripts' folder, the
 * outputs written whole or not at all (plot.h). */
#include "plot.h"
#include "io/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- gnuplot */

/* A growing string for the -e assignments. */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || t->failed) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = 2 * (t->len + (size_t)n + 1);
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* The registry's series by the panel a figure groups them in (scaling_time.gp):
 * series_quadratic, the rows whose time grows as N² (softmax, its score functions, hard);
 * series_linear, the rows of the "linear" family; the rest are approximations of softmax.
 * Names from the registry, never from a file. */
static void put_series_families(text *t)
{
    const char *var[2] = {"series_quadratic", "series_linear"};
    for (int group = 0; group < 2; group++) {
        put(t, "%s = '", var[group]);
        for (int k = 0; k < LA_KERNEL_COUNT; k++) {
            const la_kernel_info *row = la_kernel_get((la_kernel)k);
            const int in = group == 0
                               ? row->time_exponent == 2
                               : row->time_exponent != 2 && strcmp(row->family, "linear") == 0;
            for (int causal = 0; in && causal < 2; causal++)
                if (row->series[causal]) put(t, " %s", row->series[causal]);
        }
        put(t, " '; ");
    }
}

/* s as a gnuplot single-quoted string, the only kind whose one special character is
 * the quote itself ('' for a quote): what a file holds stays a string. A control
 * character (paths with one are refused before) shows as a space; enhanced: also escape
 * the characters enhanced text gives a meaning (_ ^ { } @ & ~ \) so they show as
 * written. */
static void put_quoted(text *t, const char *s, int enhanced)
{
    put(t, "'");
    for (; *s; s++) {
        if (*s == '\'')
            put(t, "''");
        else if ((unsigned char)*s < 0x20 || *s == 0x7f)
            put(t, " ");
        else if (enhanced && strchr("_^{}@&~\\", *s))
            put(t, "\\%c", *s);
        else
            put(t, "%c", *s);
    }
    put(t, "'");
}

/* array name[n] = [items...] */
static void put_array(text *t, const char *name, const char *const *items, size_t n, int enhanced)
{
    put(t, "array %s[%zu] = [", name, n);
    for (size_t i = 0; i < n; i++) {
        if (i) put(t, ", ");
        put_quoted(t, items[i], enhanced);
    }
    put(t, "]; ");
}

int plot_gnuplot_found(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, len ? p : ".");
        if (access(buf, X_OK) == 0) return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

/* The folder of the scripts: $LINATTN_PLOTS, plots/ up to three folders above this
 * program (build/linattn, build/asan/linattn), share/linattn/plots beside an installed
 * one, ./plots. */
int plot_find_scripts(char *dir, size_t size)
{
    char candidate[PATH_MAX + 64];
    const char *env = getenv("LINATTN_PLOTS");
    if (env && *env) {
        snprintf(candidate, sizeof candidate, "%s/style.gpi", env);
        if (access(candidate, R_OK) != 0)
            return cli_fail("LINATTN_PLOTS", "%s has no style.gpi (the folder of plots/*.gp)", env);
        return realpath(env, dir) ? 0 : cli_fail("LINATTN_PLOTS", "%s", strerror(errno));
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    static const char *const tails[] = {"/../plots", "/../../plots", "/../../../plots",
                                        "/../share/linattn/plots"};
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    for (size_t i = 0; i < sizeof tails / sizeof *tails + 1; i++) {
        if (i < sizeof tails / sizeof *tails)
            snprintf(candidate, sizeof candidate, "%s%s", exe, tails[i]);
        else
            snprintf(candidate, sizeof candidate, "plots");
        char style[PATH_MAX + 80];
        snprintf(style, sizeof style, "%s/style.gpi", candidate);
        if ((i < sizeof tails / sizeof *tails && !slash) || access(style, R_OK) != 0) continue;
        if (realpath(candidate, dir) && strlen(dir) < size) return 0;
    }
    return cli_fail("plot", "cannot find the gnuplot scripts (plots/style.gpi); set "
                            "LINATTN_PLOTS to the plots folder of linattn's sources");
}

/* Runs `gnuplot -e setup script.gp` in dir with the fds open in it; its stderr is
 * collected: on failure its last line is the error, on success each line is passed on
 * as a note. Returns 0 or 2. */
static int run_gnuplot(const char *dir, const char *script, const char *setup, const int *fds,
                       size_t n_fds, const char *what)
{
    char file[256];
    snprintf(file, sizeof file, "%s.gp", script);
    int pipefd[2];
    if (pipe(pipefd) != 0) return cli_fail("plot", "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]), close(pipefd[1]);
        return cli_fail("plot", "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]), close(pipefd[1]);
        for (size_t i = 0; i < n_fds; i++) /* the outputs stay open across exec */
            fcntl(fds[i], F_SETFD, 0);
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", "-e", setup, file, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    char *log = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    ssize_t got;
    while ((got = read(pipefd[0], chunk, sizeof chunk)) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (len + (size_t)got + 1 > cap) {
            char *grown = realloc(log, cap = 2 * (len + (size_t)got + 1));
            if (!grown) break;
            log = grown;
        }
        memcpy(log + len, chunk, (size_t)got);
        len += (size_t)got;
    }
    close(pipefd[0]);
    if (log) log[len] = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    /* the last non-empty line, or each line as a note */
    char last[512] = "", previous[512] = "";
    for (char *line = log; line && *line;) {
        size_t l = strcspn(line, "\n");
        int blank = strspn(line, " \t^") >= l;
        if (!blank) {
            snprintf(last, sizeof last, "%.*s", (int)l, line);
            if (ok && strcmp(last, previous) != 0) /* a warning repeated per panel: once */
                cli_line("plot: note: %s: %s", what, last);
            memcpy(previous, last, sizeof last);
        }
        line += l + (line[l] == '\n');
    }
    free(log);
    if (ok) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return cli_fail("plot", "cannot run gnuplot (install it: apt-get install gnuplot-nox)");
    return cli_fail("plot", "%s: gnuplot failed: %s", what, last[0] ? last : "no message");
}

/* Whether the figure gnuplot wrote to fd is whole: a PNG ends with its IEND chunk, an
 * SVG with </svg> (gnuplot may exit 0 after a write failed, on a full disk). */
static int figure_whole(int fd, int svg)
{
    struct stat st;
    char tail[64];
    if (fstat(fd, &st) != 0 || st.st_size < 12) return 0;
    size_t n = st.st_size < (off_t)sizeof tail ? (size_t)st.st_size : sizeof tail;
    if (pread(fd, tail, n, st.st_size - (off_t)n) != (ssize_t)n) return 0;
    if (!svg) return memcmp(tail + n - 12, "\0\0\0\0IEND\xae\x42\x60\x82", 12) == 0;
    while (n > 0 && strchr(" \t\r\n", tail[n - 1]))
        n--;
    return n >= 6 && memcmp(tail + n - 6, "</svg>", 6) == 0;
}

/* Draws script over the groups into out_dir/<name>.png|svg. Returns 0 or 2. */
int plot_render(const plot_config *c, const char *script, const char *name, group *g, size_t n)
{
    char subtitle[1024];
    plot_subtitle_and_labels(g, n, subtitle, sizeof subtitle);
    int noisy = 0;
    for (size_t i = 0; i < n; i++)
        noisy |= g[i].file->noisy[0] != 0;

    la_outfile out[2];
    int fds[2];
    size_t n_out = 0;
    const char *fmt_names[2] = {"png", "svg"};
    const int wanted[2] = {c->png, c->svg};
    char path[2][PATH_MAX + 300];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (!wanted[k]) continue;
        snprintf(path[k], sizeof path[k], "%s/%s.%s", c->out_dir, name, fmt_names[k]);
        const char *why = NULL;
        if (la_outfile_open(&out[n_out], path[k], &why) != LA_OK)
            rc = cli_fail("plot", "%s: cannot write: %s", path[k], why ? why : "error");
        else
            fds[n_out] = out[n_out].fd, n_out++;
    }

    text t = {0};
    put(&t, "formats = '%s%s%s'; ", c->png ? "png" : "", c->png && c->svg ? " " : "",
        c->svg ? "svg" : "");
    put(&t, "out = ");
    put_quoted(&t, path[c->png ? 0 : 1], 0);
    put(&t, "; ");
    for (size_t k = 0, i = 0; k < 2; k++)
        if (wanted[k]) put(&t, "out_%s = '/dev/fd/%d'; ", fmt_names[k], fds[i++]);
    put(&t, "subtitle = ");
    put_quoted(&t, subtitle, 1);
    put(&t, "; noisy = %d; data = ", noisy);
    put_quoted(&t, g[0].file->path, 0);
    put(&t, "; fits = ");
    put_quoted(&t, g[0].file->aux, 0);
    put(&t, "; ngroups = %zu; ", n);
    put_series_families(&t);
    const char *field[5][MAX_GROUPS] = {{0}}; /* gcc cannot see that n >= 1 */
    for (size_t i = 0; i < n; i++) {
        field[0][i] = g[i].file->path;
        field[1][i] = g[i].file->aux;
        field[2][i] = g[i].where;
        field[3][i] = g[i].aux_where;
        field[4][i] = g[i].label;
    }
    put_array(&t, "gfile", field[0], n, 0);
    put_array(&t, "gaux", field[1], n, 0);
    put_array(&t, "gwhere", field[2], n, 0);
    put_array(&t, "gauxwhere", field[3], n, 0);
    put_array(&t, "glabel", field[4], n, 1);
    if (t.failed && rc == 0) rc = cli_fail("plot", "out of memory");

    if (rc == 0) rc = run_gnuplot(c->scripts, script, t.s, fds, n_out, script);
    for (size_t i = 0, k = 0; i < n_out && rc == 0; i++, k++) {
        while (!wanted[k])
            k++;
        struct stat st;
        const char *why = NULL;
        if (fstat(out[i].fd, &st) != 0 || st.st_size == 0)
            rc = cli_fail("plot", "%s: gnuplot wrote nothing to %s", script, path[k]);
        else if (!figure_whole(out[i].fd, k == 1))
            rc = cli_fail("plot", "%s: %s is incomplete (a full disk?); the old figure is kept",
                          script, path[k]);
        else if (la_outfile_commit(&out[i], &why) != LA_OK)
            rc = cli_fail("plot", "%s: cannot write: %s", path[k], why ? why : "error");
    }
    for (size_t i = 0; i < n_out; i++)
        la_outfile_close(&out[i]);
    if (rc == 0)
        printf("plot: %s/%s%s%s\n", c->out_dir, name,
               c->png && c->svg ? ".png, .svg"
               : c->png         ? ".png"
                                : ".svg",
               n > 1 ? " (overlay)" : "");
    free(t.s);
    return rc;
}
