/* textout.c — text outputs written whole (textout.h). */
#include "textout.h"

#include "cli.h"
#include "io/outfile.h"
#include "linattn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int textout_open(textout_buffer *t, const char *what)
{
    t->buf = NULL;
    t->len = 0;
    t->f = open_memstream(&t->buf, &t->len);
    return t->f ? 0 : cli_fail(what, "out of memory");
}

void textout_discard(textout_buffer *t)
{
    if (t->f) fclose(t->f);
    free(t->buf);
    t->f = NULL;
    t->buf = NULL;
}

/* Writes all of buf to fd; 0 or -1 (errno). */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t put = write(fd, buf, len);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return -1;
        buf += put;
        len -= (size_t)put;
    }
    return 0;
}

int textout_finish(textout_buffer *t, const char *path)
{
    const char *shown = path && strcmp(path, "-") != 0 ? path : "(standard output)";
    if (fclose(t->f) != 0) {
        t->f = NULL;
        textout_discard(t);
        return cli_fail(shown, "out of memory");
    }
    t->f = NULL;
    int rc = 0;
    if (!path || strcmp(path, "-") == 0) {
        if (fwrite(t->buf, 1, t->len, stdout) != t->len || fflush(stdout) != 0)
            rc = cli_fail(shown, "cannot write: %s", strerror(errno));
    } else {
        la_outfile o;
        const char *why = NULL;
        if (la_outfile_open(&o, path, &why) != LA_OK) {
            rc = cli_fail(path, "cannot write: %s", why ? why : "cannot open");
        } else if (write_all(o.fd, t->buf, t->len) != 0) {
            rc = cli_fail(path, "cannot write: %s", strerror(errno));
            la_outfile_close(&o);
        } else if (la_outfile_commit(&o, &why) != LA_OK) {
            rc = cli_fail(path, "cannot write: %s", why ? why : "cannot commit");
            la_outfile_close(&o);
        } else if (la_outfile_close(&o) != 0) {
            rc = cli_fail(path, "cannot write: %s", strerror(errno));
        }
    }
    textout_discard(t);
    return rc;
}
