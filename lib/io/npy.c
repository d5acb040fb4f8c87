/* npy.c — .npy read/write (NumPy format 1.0, 2.0 and 3.0; C order, little-endian).
 *
 * File layout:  "\x93NUMPY" major minor  header_len (u16 for 1.0, u32 for 2.0/3.0, LE)
 *               header: a Python dict literal {'descr': '<f4', 'fortran_order': False,
 *                       'shape': (2, 3), } padded with spaces, ending in '\n'
 *               data:   product(shape) elements, exactly, nothing after.
 * The parser reads only inside [bytes, bytes + size): it is fuzzed (fuzz/fuzz_npy.c).
 * This file depends on linattn.h and io/outfile.h only: the fuzz build needs npy.c, outfile.c,
 * status.c. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "io/outfile.h"
#include "linattn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c copies data as is: it assumes a little-endian host"
#endif

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

size_t la_npy_dtype_size(la_npy_dtype dtype)
{
    switch (dtype) {
    case LA_NPY_BOOL: return 1;
    case LA_NPY_F16:
    case LA_NPY_BF16: return 2;
    case LA_NPY_F32:
    case LA_NPY_I32: return 4;
    case LA_NPY_F64:
    case LA_NPY_I64: return 8;
    }
    return 0;
}

/* Overflow-checked a · b (kept here so npy.c builds alone for the fuzzer). */
static bool mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* ---------------------------------------------------------------- header parsing */

/* A cursor over the header text [pos, end); every read checks pos < end. */
typedef struct {
    const char *pos, *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->pos < c->end && (*c->pos == ' ' || *c->pos == '\t'))
        c->pos++;
}

/* Consumes ch (after optional spaces) and returns true, or returns false. */
static bool accept(cursor *c, char ch)
{
    skip_space(c);
    if (c->pos < c->end && *c->pos == ch) {
        c->pos++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes: '...' or "...". Sets [*s, *s + *len). */
static bool parse_string(cursor *c, const char **s, size_t *len)
{
    skip_space(c);
    if (c->pos >= c->end || (*c->pos != '\'' && *c->pos != '"')) return false;
    char quote = *c->pos++;
    const char *start = c->pos;
    while (c->pos < c->end && *c->pos != quote) {
        if (*c->pos == '\\' || *c->pos == '\n') return false;
        c->pos++;
    }
    if (c->pos >= c->end) return false;
    *s = start;
    *len = (size_t)(c->pos - start);
    c->pos++; /* closing quote */
    return true;
}

/* Does [s, s + len) spell word exactly? */
static bool spells(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(s, word, len) == 0;
}

static bool is_ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* The dtype a descr names: '<f2', '<f4', '<f8', '<i4', '<i8', '|b1', and '<V2' read as bfloat16
 * (NumPy has no bfloat16: ml_dtypes' bfloat16 arrays are saved with descr '<V2', and a
 * V2 view of their bits with '|V2'); on this little-endian host '=' (native) and '|'
 * (NumPy reads it as native) mean the same. */
static la_status parse_descr(const char *s, size_t len, la_npy_dtype *dtype, const char **why)
{
    static const struct {
        const char *code;
        la_npy_dtype dtype;
    } known[] = {{"f2", LA_NPY_F16}, {"V2", LA_NPY_BF16}, {"f4", LA_NPY_F32}, {"f8", LA_NPY_F64},
                 {"i4", LA_NPY_I32}, {"i8", LA_NPY_I64},  {"b1", LA_NPY_BOOL}};
    if (len == 3 && (s[0] == '<' || s[0] == '=' || s[0] == '|')) {
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
            if (memcmp(s + 1, known[i].code, 2) == 0) {
                *dtype = known[i].dtype;
                return LA_OK;
            }
        }
    }
    if (len >= 1 && s[0] == '>')
        *why = "big-endian data is not supported";
    else
        *why = "unsupported dtype (need little-endian float16, bfloat16 (V2), float32, float64, "
               "int32, int64 or bool)";
    return LA_EDTYPE;
}

/* A non-negative decimal integer for a shape entry. */
static la_status parse_dim(cursor *c, size_t *dim, const char **why)
{
    skip_space(c);
    if (c->pos < c->end && *c->pos == '-') {
        *why = "negative dimension in shape";
        return LA_EFORMAT;
    }
    if (c->pos >= c->end || *c->pos < '0' || *c->pos > '9') {
        *why = "shape entries must be non-negative integers";
        return LA_EFORMAT;
    }
    size_t value = 0;
    bool overflow = false;
    while (c->pos < c->end && *c->pos >= '0' && *c->pos <= '9') {
        size_t digit = (size_t)(*c->pos - '0');
        if (value > (SIZE_MAX - digit) / 10)
            overflow = true;
        else
            value = value * 10 + digit;
        c->pos++;
    }
    /* "2.5", "3e2", "0x10", "7L": not a plain integer */
    if (c->pos < c->end && (*c->pos == '.' || is_ident_char(*c->pos))) {
        *why = "shape entries must be non-negative integers";
        return LA_EFORMAT;
    }
    if (overflow) {
        *why = "shape dimension does not fit in size_t";
        return LA_EOVERFLOW;
    }
    *dim = value;
    return LA_OK;
}

/* A Python tuple of non-negative ints: (), (n,), (a, b), (a, b,). */
static la_status parse_shape(cursor *c, la_array *a, const char **why)
{
    if (!accept(c, '(')) {
        *why = "shape is not a tuple";
        return LA_EFORMAT;
    }
    a->ndim = 0;
    if (accept(c, ')')) return LA_OK;
    for (;;) {
        if (a->ndim == LA_NPY_MAX_DIMS) {
            *why = "shape has more than 8 dimensions";
            return LA_EFORMAT;
        }
        la_status st = parse_dim(c, &a->shape[a->ndim], why);
        if (st != LA_OK) return st;
        a->ndim++;
        bool comma = accept(c, ',');
        if (accept(c, ')')) {
            if (a->ndim == 1 && !comma) { /* "(3)" is the int 3 in Python, not a tuple */
                *why = "shape is not a tuple (a 1-D shape needs a trailing comma)";
                return LA_EFORMAT;
            }
            return LA_OK;
        }
        if (!comma) {
            *why = "malformed shape tuple";
            return LA_EFORMAT;
        }
    }
}

/* The header dict. Keys in any order, each exactly once; a trailing comma is fine.
 * Syntax errors come first, then missing keys, then unsupported values. */
static la_status parse_header(const char *text, size_t len, la_array *a, const char **why)
{
    cursor c = {text, text + len};
    bool has_descr = false, has_fortran = false, has_shape = false, fortran = false;
    la_status dtype_status = LA_OK;
    const char *dtype_why = NULL;

    if (len == 0 || text[len - 1] != '\n') {
        *why = "header does not end with a newline";
        return LA_EFORMAT;
    }
    if (!accept(&c, '{')) {
        *why = "header is not a Python dict";
        return LA_EFORMAT;
    }
    while (!accept(&c, '}')) {
        const char *key, *val;
        size_t key_len, val_len;
        if (!parse_string(&c, &key, &key_len) || !accept(&c, ':')) {
            *why = "malformed header dict";
            return LA_EFORMAT;
        }
        if (spells(key, key_len, "descr")) {
            if (has_descr) goto duplicate;
            has_descr = true;
            skip_space(&c);
            if (c.pos < c.end && *c.pos == '[') {
                *why = "structured dtypes are not supported";
                return LA_EDTYPE;
            }
            if (!parse_string(&c, &val, &val_len)) {
                *why = "descr is not a string";
                return LA_EFORMAT;
            }
            dtype_status = parse_descr(val, val_len, &a->dtype, &dtype_why);
        } else if (spells(key, key_len, "fortran_order")) {
            if (has_fortran) goto duplicate;
            has_fortran = true;
            skip_space(&c);
            const char *word = c.pos;
            while (c.pos < c.end && is_ident_char(*c.pos))
                c.pos++;
            if (spells(word, (size_t)(c.pos - word), "True"))
                fortran = true;
            else if (spells(word, (size_t)(c.pos - word), "False"))
                fortran = false;
            else {
                *why = "fortran_order is not True or False";
                return LA_EFORMAT;
            }
        } else if (spells(key, key_len, "shape")) {
            if (has_shape) goto duplicate;
            has_shape = true;
            la_status st = parse_shape(&c, a, why);
            if (st != LA_OK) return st;
        } else {
            *why = "unexpected key in header (want descr, fortran_order, shape)";
            return LA_EFORMAT;
        }
        if (!accept(&c, ',')) {
            if (accept(&c, '}')) break;
            *why = "malformed header dict";
            return LA_EFORMAT;
        }
    }
    /* after the dict: only padding, up to the final newline */
    while (c.pos < c.end && (*c.pos == ' ' || *c.pos == '\t' || *c.pos == '\r' || *c.pos == '\n'))
        c.pos++;
    if (c.pos != c.end) {
        *why = "garbage after the header dict";
        return LA_EFORMAT;
    }
    if (!has_descr || !has_fortran || !has_shape) {
        *why = !has_descr     ? "header lacks 'descr'"
               : !has_fortran ? "header lacks 'fortran_order'"
                              : "header lacks 'shape'";
        return LA_EFORMAT;
    }
    if (dtype_status != LA_OK) {
        *why = dtype_why;
        return dtype_status;
    }
    if (fortran) {
        *why = "Fortran order is not supported";
        return LA_EFORMAT;
    }
    return LA_OK;

duplicate:
    *why = "duplicate key in header";
    return LA_EFORMAT;
}

/* ---------------------------------------------------------------- parse */

/* The header dict at [text, text + len) into a (dtype, shape, count) and the data bytes
 * the shape needs. */
static la_status parse_dict(const unsigned char *text, size_t len, la_array *a, size_t *need,
                            const char **why)
{
    la_status st = parse_header((const char *)text, len, a, why);
    if (st != LA_OK) return st;
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (!mul_ok(count, a->shape[i], &count)) {
            *why = "shape product overflows size_t";
            return LA_EOVERFLOW;
        }
    }
    if (!mul_ok(count, la_npy_dtype_size(a->dtype), need)) {
        *why = "shape times item size overflows size_t";
        return LA_EOVERFLOW;
    }
    a->count = count;
    return LA_OK;
}

/* Reasons with numbers in them live here: one per thread, valid until the next call. */
static _Thread_local char size_reason[96];

la_status la_npy_parse(const void *bytes, size_t size, la_array *out, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (!out) {
        *why = "no output array";
        return LA_EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (!bytes && size > 0) {
        *why = "no input bytes";
        return LA_EINVAL;
    }
    const unsigned char *b = bytes;

    /* magic and version */
    if (size == 0) {
        *why = "empty file: not a .npy file";
        return LA_EFORMAT;
    }
    size_t magic_seen = size < sizeof npy_magic ? size : sizeof npy_magic;
    if (memcmp(b, npy_magic, magic_seen) != 0) {
        *why = "bad magic: not a .npy file";
        return LA_EFORMAT;
    }
    if (size < 8) {
        *why = "truncated before the header length";
        return LA_EFORMAT;
    }
    unsigned major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0) {
        *why = "unsupported .npy version (want 1.0, 2.0 or 3.0)";
        return LA_EFORMAT;
    }

    /* header length: u16 (1.0) or u32 (2.0, 3.0), little-endian */
    size_t preamble = major == 1 ? 10 : 12;
    if (size < preamble) {
        *why = "truncated before the header length";
        return LA_EFORMAT;
    }
    size_t header_len = (size_t)b[8] | (size_t)b[9] << 8;
    if (major > 1) header_len |= (size_t)b[10] << 16 | (size_t)b[11] << 24;
    if (header_len > size - preamble) {
        *why = "truncated header (header length runs past the end of the file)";
        return LA_EFORMAT;
    }

    la_array a;
    memset(&a, 0, sizeof a);
    size_t need;
    la_status st = parse_dict(b + preamble, header_len, &a, &need, why);
    if (st != LA_OK) return st;

    /* bytes the shape needs, against the bytes present */
    size_t have = size - preamble - header_len;
    if (have != need) {
        snprintf(size_reason, sizeof size_reason, "data is %zu bytes, shape needs %zu", have, need);
        *why = size_reason;
        return LA_EFORMAT;
    }

    /* copy the data (never NULL on success, even for zero elements) */
    a.data = malloc(need > 0 ? need : 1);
    if (!a.data) {
        *why = "out of memory";
        return LA_ENOMEM;
    }
    if (need > 0) memcpy(a.data, b + preamble + header_len, need);
    *out = a;
    *why = "success";
    return LA_OK;
}

/* ---------------------------------------------------------------- read */

/* A short static reason for a failed open or read. */
static const char *io_reason(int err)
{
    switch (err) {
    case ENOENT: return "no such file";
    case EACCES: return "permission denied";
    case EISDIR: return "is a directory";
    case ENOTDIR: return "a component of the path is not a directory";
    case ENOMEM: return "out of memory";
    }
    return "cannot read file";
}

/* Reads up to n bytes (fewer only at end of file). Returns the count, or -1. */
static ssize_t read_full(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The longest header la_npy_read accepts (NumPy's own reader stops at 10000 bytes). */
#define NPY_READ_MAX_HEADER (1u << 20)

/* Reads in three bounded steps, so a hostile file or stream (/dev/zero, a pipe that
 * never ends) costs at most the bytes its header announces: the preamble (magic,
 * version, header length), the header, then exactly the data the shape needs, and one
 * byte more to tell a longer file. Opened non-blocking so a FIFO with no writer does
 * not hang the open (it then reads as empty). */
la_status la_npy_read(const char *path, la_array *out, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (out) memset(out, 0, sizeof *out);
    if (!path || !out) {
        *why = "no path or no output array";
        return LA_EINVAL;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        *why = io_reason(errno);
        return LA_EIO;
    }
    la_status st = LA_OK;
    unsigned char *head = NULL;
    la_array a;
    memset(&a, 0, sizeof a);
    struct stat sb;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        *why = io_reason(errno);
        st = LA_EIO;
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        *why = "is a directory";
        st = LA_EIO;
        goto done;
    }

    /* 1. the preamble: 12 bytes cover both layouts (1.0's are 10, then its header) */
    unsigned char pre[12];
    ssize_t got = read_full(fd, pre, sizeof pre);
    if (got < 0) {
        *why = io_reason(errno);
        st = LA_EIO;
        goto done;
    }
    if ((size_t)got < sizeof pre || memcmp(pre, npy_magic, 6) != 0 || pre[6] < 1 || pre[6] > 3 ||
        pre[7] != 0) {
        st = la_npy_parse(pre, (size_t)got, out, why); /* says what is wrong */
        if (st == LA_OK) goto done;                    /* a whole file in 12 bytes cannot be */
        goto done;
    }
    size_t preamble = pre[6] == 1 ? 10 : 12;
    size_t header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    if (preamble == 12) header_len |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    if (header_len > NPY_READ_MAX_HEADER) {
        *why = "header longer than 1 MiB: not a .npy file linattn reads";
        st = LA_EFORMAT;
        goto done;
    }

    /* 2. the header (at least the 2 bytes a 1.0 preamble leaves of the 12 read: a
     * header is a dict and a newline, so a shorter one is malformed anyway) */
    size_t head_size = preamble + header_len;
    if (head_size < sizeof pre) {
        *why = "header too short to be a dict";
        st = LA_EFORMAT;
        goto done;
    }
    head = malloc(head_size);
    if (!head) {
        *why = "out of memory";
        st = LA_ENOMEM;
        goto done;
    }
    memcpy(head, pre, sizeof pre);
    if (head_size > sizeof pre) {
        got = read_full(fd, head + sizeof pre, head_size - sizeof pre);
        if (got < 0) {
            *why = io_reason(errno);
            st = LA_EIO;
            goto done;
        }
        if ((size_t)got < head_size - sizeof pre) {
            *why = "truncated header (header length runs past the end of the file)";
            st = LA_EFORMAT;
            goto done;
        }
    }
    size_t need;
    st = parse_dict(head + preamble, header_len, &a, &need, why);
    if (st != LA_OK) goto done;

    /* 3. exactly the data the shape needs; a regular file's size is known up front */
    if (S_ISREG(sb.st_mode) && (sb.st_size < 0 || (size_t)sb.st_size - head_size != need ||
                                (size_t)sb.st_size < head_size)) {
        size_t have = (size_t)sb.st_size >= head_size ? (size_t)sb.st_size - head_size : 0;
        snprintf(size_reason, sizeof size_reason, "data is %zu bytes, shape needs %zu", have, need);
        *why = size_reason;
        st = LA_EFORMAT;
        goto done;
    }
    a.data = malloc(need > 0 ? need : 1);
    if (!a.data) {
        *why = "out of memory";
        st = LA_ENOMEM;
        goto done;
    }
    got = read_full(fd, a.data, need);
    unsigned char extra;
    ssize_t more = got >= 0 ? read_full(fd, &extra, 1) : -1;
    if (got < 0 || more < 0) {
        *why = io_reason(errno);
        st = LA_EIO;
        goto done;
    }
    size_t have = (size_t)got + (size_t)more;
    if (have != need) {
        snprintf(size_reason, sizeof size_reason,
                 more ? "data is more than %zu bytes, shape needs %zu"
                      : "data is %zu bytes, shape needs %zu",
                 more ? need : have, need);
        *why = size_reason;
        st = LA_EFORMAT;
        goto done;
    }
    *out = a;
    memset(&a, 0, sizeof a);
    *why = "success";
done:
    free(a.data);
    free(head);
    close(fd);
    return st;
}

/* ---------------------------------------------------------------- write */

static const char *descr_of(la_npy_dtype dtype)
{
    switch (dtype) {
    case LA_NPY_F16: return "<f2";
    case LA_NPY_BF16: return "<V2";
    case LA_NPY_F32: return "<f4";
    case LA_NPY_F64: return "<f8";
    case LA_NPY_I32: return "<i4";
    case LA_NPY_I64: return "<i8";
    case LA_NPY_BOOL: return "|b1";
    }
    return NULL;
}

/* Writes all of [p, p + n) to fd. */
static bool write_all(int fd, const void *p, size_t n)
{
    const char *at = p;
    while (n > 0) {
        ssize_t put = write(fd, at, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        at += put;
        n -= (size_t)put;
    }
    return true;
}

/* The header exactly as NumPy 1.24 writes it: the dict with sorted keys, 21 − digits of
 * the first dimension spare spaces (room to grow that axis in place), then spaces and a
 * newline so the data starts at a multiple of 64 bytes. Returns the preamble + header
 * length written into buf (cap bytes), or 0 when it does not fit. */
static size_t format_header(const la_array *a, char *buf, size_t cap)
{
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr_of(a->dtype));
    for (int i = 0; i < a->ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, i == 0 ? "%zu" : ", %zu", a->shape[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, a->ndim == 1 ? ",), }" : "), }");
    if (a->ndim > 0) {
        int digits = snprintf(NULL, 0, "%zu", a->shape[0]);
        for (int i = digits; i < 21; i++)
            dict[n++] = ' ';
    }
    /* version 1.0 when the length fits in 16 bits, else 2.0 */
    size_t text_len = (size_t)n + 1; /* + '\n' */
    size_t preamble = 10;
    size_t pad = 64 - (preamble + text_len) % 64;
    if (text_len + pad > 0xffff) {
        preamble = 12;
        pad = 64 - (preamble + text_len) % 64;
    }
    size_t header_len = text_len + pad, total = preamble + header_len;
    if (total > cap) return 0;
    memcpy(buf, npy_magic, 6);
    buf[6] = preamble == 10 ? 1 : 2;
    buf[7] = 0;
    for (size_t i = 0; i < preamble - 8; i++)
        buf[8 + i] = (char)(header_len >> (8 * i) & 0xff);
    memcpy(buf + preamble, dict, (size_t)n);
    memset(buf + preamble + n, ' ', pad);
    buf[total - 1] = '\n';
    return total;
}

/* Is a a consistent array: known dtype, ndim in range, count = product of shape? */
static bool array_ok(const la_array *a, size_t *bytes)
{
    if (!a || !descr_of(a->dtype) || a->ndim < 0 || a->ndim > LA_NPY_MAX_DIMS) return false;
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++)
        if (!mul_ok(count, a->shape[i], &count)) return false;
    if (count != a->count || !mul_ok(count, la_npy_dtype_size(a->dtype), bytes)) return false;
    return a->data != NULL || *bytes == 0;
}

/* The header and data of a, appended to fd. */
static la_status write_npy_fd(int fd, const la_array *a, const char **why)
{
    size_t bytes;
    if (!array_ok(a, &bytes)) {
        *why = "no path or an inconsistent array";
        return LA_EINVAL;
    }
    char header[1024];
    size_t header_size = format_header(a, header, sizeof header);
    if (header_size == 0) {
        *why = "header too long";
        return LA_EINVAL;
    }
    if (!write_all(fd, header, header_size) || !write_all(fd, a->data, bytes)) {
        *why = strerror(errno);
        return LA_EIO;
    }
    return LA_OK;
}

la_status la_npy_write_outfile(la_outfile *o, const la_array *a, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (!o || o->fd < 0 || o->committed) {
        *why = "no open output file";
        return LA_EINVAL;
    }
    return write_npy_fd(o->fd, a, why);
}

la_status la_npy_write_why(const char *path, const la_array *a, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    size_t bytes;
    if (!path || !*path || !array_ok(a, &bytes)) {
        *why = "no path or an inconsistent array";
        return LA_EINVAL;
    }
    char header[1024];
    if (format_header(a, header, sizeof header) == 0) {
        *why = "header too long";
        return LA_EINVAL;
    }
    la_outfile *o = malloc(sizeof *o);
    if (!o) {
        *why = "out of memory";
        return LA_ENOMEM;
    }
    la_status st = la_outfile_open(o, path, why);
    if (st == LA_OK) {
        st = write_npy_fd(o->fd, a, why);
        if (st == LA_OK) st = la_outfile_commit(o, why);
        int err = errno;
        if (la_outfile_close(o) != 0 && st == LA_OK) {
            err = errno;
            *why = strerror(err);
            st = LA_EIO;
        }
        errno = err;
    }
    int err = errno;
    free(o);
    errno = err;
    return st;
}

la_status la_npy_write(const char *path, const la_array *a)
{
    return la_npy_write_why(path, a, NULL);
}

/* ---------------------------------------------------------------- widening */

/* IEEE 754 binary16 bits -> float32 bits, exactly: sign, 5-bit exponent (bias 15),
 * 10-bit fraction. A subnormal (exponent 0) is renormalized: shifted until its leading
 * 1 reaches the implicit place, the exponent lowered by the shift. Inf and NaN keep
 * their sign and fraction (a NaN's payload moves to the top of float32's fraction, so a
 * quiet NaN stays quiet). */
static uint32_t half_bits_to_float_bits(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
    if (exponent == 0x1f) return sign | 0x7f800000u | fraction << 13; /* inf, NaN */
    if (exponent == 0) {
        if (fraction == 0) return sign; /* ±0 */
        int shift = 0;
        while (!(fraction & 0x400)) {
            fraction <<= 1;
            shift++;
        }
        fraction &= 0x3ff;
        return sign | (uint32_t)(127 - 15 + 1 - shift) << 23 | fraction << 13;
    }
    return sign | (exponent + 127 - 15) << 23 | fraction << 13;
}

la_status la_array_to_f32(la_array *a)
{
    if (!a || (a->dtype != LA_NPY_F16 && a->dtype != LA_NPY_BF16 && a->dtype != LA_NPY_F32) ||
        (!a->data && a->count > 0))
        return LA_EINVAL;
    if (a->dtype == LA_NPY_F32) return LA_OK;
    size_t bytes;
    if (!mul_ok(a->count, sizeof(float), &bytes)) return LA_EOVERFLOW;
    float *wide = malloc(bytes > 0 ? bytes : 1);
    if (!wide) return LA_ENOMEM;
    const uint16_t *narrow = a->data;
    for (size_t i = 0; i < a->count; i++) {
        /* bfloat16 is the top half of a float32 */
        const uint32_t bits =
            a->dtype == LA_NPY_F16 ? half_bits_to_float_bits(narrow[i]) : (uint32_t)narrow[i] << 16;
        memcpy(&wide[i], &bits, sizeof bits);
    }
    free(a->data);
    a->data = wide;
    a->dtype = LA_NPY_F32;
    return LA_OK;
}

void la_array_free(la_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}
