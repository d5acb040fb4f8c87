/* test_files.c — the library's files against hostile paths: la_npy_read stops promptly
 * on /dev/zero and on a FIFO with no writer, la_outfile (behind la_npy_write) writes
 * through a symbolic link, refuses to replace a directory, a FIFO or a device (made
 * with mknod in a temporary folder when root), may replace its own input, leaves nothing
 * when not committed, and keeps writing the named file after its commit. */
#define _XOPEN_SOURCE 700 /* mknod, S_IFCHR */
#define _DEFAULT_SOURCE   /* makedev */
#include "../testutil.h"
#include "io/outfile.h"

#include "core/internal.h" /* la_outfile_named_only */

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char tmpdir[64];

static const char *in_tmp(const char *name)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
    return p;
}

static int count_tmp_entries(void)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static la_array small_array(float *data)
{
    la_array a;
    memset(&a, 0, sizeof a);
    a.dtype = LA_NPY_F32;
    a.ndim = 2;
    a.shape[0] = 2;
    a.shape[1] = 3;
    a.count = 6;
    for (int i = 0; i < 6; i++)
        data[i] = 0.5f * (float)i;
    a.data = data;
    return a;
}

/* /dev/zero never ends: refused after its first bytes, as not a .npy file. */
static void read_dev_zero(void **state)
{
    (void)state;
    la_array a;
    const char *why = NULL;
    alarm(10); /* a hang fails the test instead of stalling make test */
    assert_int_equal(la_npy_read("/dev/zero", &a, &why), LA_EFORMAT);
    alarm(0);
    assert_non_null(strstr(why, "not a .npy file"));
    assert_null(a.data);
}

/* A FIFO nobody writes to: the open does not block, it reads as empty. */
static void read_fifo_without_writer(void **state)
{
    (void)state;
    const char *fifo = in_tmp("in.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    la_array a;
    const char *why = NULL;
    alarm(10);
    assert_int_equal(la_npy_read(fifo, &a, &why), LA_EFORMAT);
    alarm(0);
    assert_non_null(strstr(why, "empty"));
    unlink(fifo);
}

/* A directory, a FIFO and a device at the output path are refused and stay. */
static void refuses_non_regular_outputs(void **state)
{
    (void)state;
    float data[6];
    la_array a = small_array(data);
    const char *why = NULL;

    const char *dir = in_tmp("out.dir");
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(la_npy_write_why(dir, &a, &why), LA_EIO);
    assert_non_null(strstr(why, "directory"));

    const char *fifo = in_tmp("out.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(la_npy_write_why(fifo, &a, &why), LA_EIO);
    assert_non_null(strstr(why, "FIFO"));

    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(stat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    if (geteuid() == 0) { /* a null device of our own, never the system's /dev/null */
        const char *dev = in_tmp("out.dev");
        assert_int_equal(mknod(dev, S_IFCHR | 0600, makedev(1, 3)), 0);
        assert_int_equal(la_npy_write_why(dev, &a, &why), LA_EIO);
        assert_non_null(strstr(why, "device"));
        assert_int_equal(stat(dev, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
        unlink(dev);
    } else {
        print_message("skipped the device case: mknod needs root\n");
    }
    rmdir(dir);
    unlink(fifo);
    assert_int_equal(count_tmp_entries(), 0);
}

/* A symbolic link stays a link; its target gets the array. */
static void writes_through_symlink(void **state)
{
    (void)state;
    float data[6];
    la_array a = small_array(data), b;
    const char *target = in_tmp("target.npy"), *link = in_tmp("link.npy");
    assert_int_equal(symlink("target.npy", link), 0);
    assert_int_equal(la_npy_write(link, &a), LA_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(la_npy_read(target, &b, NULL), LA_OK);
    assert_memory_equal(b.data, data, sizeof data);
    la_array_free(&b);
    unlink(link);
    unlink(target);
}

/* The output may be the input: read first, replaced whole. */
static void output_is_its_input(void **state)
{
    (void)state;
    float data[6];
    la_array a = small_array(data), b;
    const char *path = in_tmp("same.npy");
    assert_int_equal(la_npy_write(path, &a), LA_OK);
    assert_int_equal(la_npy_read(path, &b, NULL), LA_OK);
    for (size_t i = 0; i < b.count; i++)
        ((float *)b.data)[i] *= 2;
    assert_int_equal(la_npy_write(path, &b), LA_OK);
    la_array c;
    assert_int_equal(la_npy_read(path, &c, NULL), LA_OK);
    assert_memory_equal(c.data, b.data, sizeof data);
    la_array_free(&b);
    la_array_free(&c);
    unlink(path);
}

/* Not committed: nothing at the path, no temporary. Committed: the descriptor keeps
 * writing the named file. */
static void outfile_commit_or_nothing(void **state)
{
    (void)state;
    const char *path = in_tmp("o.txt");
    la_outfile o;
    assert_int_equal(la_outfile_open(&o, path, NULL), LA_OK);
    assert_int_equal(write(o.fd, "abc", 3), 3);
    assert_int_equal(la_outfile_close(&o), 0);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_tmp_entries(), 0);

    assert_int_equal(la_outfile_open(&o, path, NULL), LA_OK);
    assert_int_equal(write(o.fd, "ab", 2), 2);
    assert_int_equal(la_outfile_commit(&o, NULL), LA_OK);
    assert_int_equal(write(o.fd, "c\n", 2), 2);
    assert_int_equal(la_outfile_close(&o), 0);
    char buf[8] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "abc\n");
    assert_int_equal(count_tmp_entries(), 0);
    unlink(path);
}

/* The named fallback: a temporary that exists by name until the commit, and that
 * la_outfile_signal_cleanup (what the command's SIGINT/SIGTERM handler calls) removes. */
static void named_temporary_cleaned_on_signal(void **state)
{
    (void)state;
    const char *path = in_tmp("sig.txt");
    la_outfile o;
    assert_int_equal(la_outfile_open(&o, path, NULL), LA_OK);
    assert_int_equal(write(o.fd, "abc", 3), 3);
    assert_int_equal(count_tmp_entries(), 1);
    la_outfile_signal_cleanup();
    assert_int_equal(count_tmp_entries(), 0);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(la_outfile_close(&o), 0);
}

static int named_on(void **state)
{
    (void)state;
    la_outfile_named_only(true);
    return 0;
}

static int named_off(void **state)
{
    (void)state;
    la_outfile_named_only(false);
    return 0;
}

int main(void)
{
    tu_init("test_files");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_files.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_dev_zero),
        cmocka_unit_test(read_fifo_without_writer),
        cmocka_unit_test(refuses_non_regular_outputs),
        cmocka_unit_test(writes_through_symlink),
        cmocka_unit_test(output_is_its_input),
        cmocka_unit_test(outfile_commit_or_nothing),
    };
    int failed = cmocka_run_group_tests_name("O_TMPFILE", tests, NULL, NULL);
    /* again on the named fallback (file systems without O_TMPFILE) */
    const struct CMUnitTest named[] = {
        cmocka_unit_test(refuses_non_regular_outputs),
        cmocka_unit_test(writes_through_symlink),
        cmocka_unit_test(output_is_its_input),
        cmocka_unit_test(outfile_commit_or_nothing),
        cmocka_unit_test(named_temporary_cleaned_on_signal),
    };
    failed += cmocka_run_group_tests_name("named fallback", named, named_on, named_off);
    rmdir(tmpdir);
    return failed;
}
