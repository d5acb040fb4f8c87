/* test_npy.c — the .npy reader and writer: NumPy's own headers parse and are written
 * byte for byte, every dtype and shape round-trips, every malformed file is refused with
 * the right status and a reason, and a failed write leaves nothing behind. */
#include "../testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- NumPy's headers */

/* Generated with NumPy 1.24 (np.save into a BytesIO, header bytes only); the data
 * after them is the little-endian values, built below. */

/* np.save(np.float64(2.5)): shape () */
static const char f64_scalar[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': "
    "(), }                                                              \n";
/* np.save(np.arange(3, dtype='<f4')): shape (3,) */
static const char f32_vec[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(3,), }                                                            \n";
/* np.save(np.arange(6, dtype='<i4').reshape(2, 3) - 2): shape (2, 3) */
static const char i32_2x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': "
    "(2, 3), }                                                          \n";
/* np.save((np.arange(16, dtype='<i8') - 8).reshape(2, 1, 2, 4) * 10**12) */
static const char i64_4d[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': "
    "(2, 1, 2, 4), }                                                    \n";
/* np.save(np.zeros((0, 3))): no data bytes at all */
static const char f64_empty[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': "
    "(0, 3), }                                                          \n";
/* np.lib.format.write_array(f, np.array([1.5, -2], np.float32), version=(2, 0)) and (3, 0) */
static const char f32_v2[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(2,), }                                                          \n";
static const char f32_v3[] =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(2,), }                                                          \n";
/* NumPy's headers for shape (1234567890123, 0, 2) (a long first dimension eats into
 * the 21 spare spaces) and for eight dimensions (192 bytes; from
 * np.lib.format._write_array_header, which np.save uses). */
static const char f32_long_dim[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(1234567890123, 0, 2), }                                           \n";
static const char f32_eight_dims[] =
    "\x93NUMPY\x01\x00\xb6\x00{'descr': '<f4', 'fortran_order': False, 'shape': (123456789, "
    "0, 123456789, 123456789, 123456789, 123456789, 123456789, 123456789), }"
    "                                                \n";

/* A file image: header (without its C terminator) then data. Caller frees. */
static char *with_data(const char *header, size_t header_len, const void *data, size_t n,
                       size_t *size)
{
    char *img = tu_alloc(header_len + n + 1);
    memcpy(img, header, header_len);
    if (n) memcpy(img + header_len, data, n);
    *size = header_len + n;
    return img;
}

static void expect_shape(const la_array *a, la_npy_dtype dtype, int ndim, const size_t *shape,
                         size_t count)
{
    assert_int_equal(a->dtype, dtype);
    assert_int_equal(a->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        assert_int_equal(a->shape[i], shape[i]);
    assert_int_equal(a->count, count);
    assert_non_null(a->data);
}

/* Each NumPy file parses to the shape and values NumPy wrote. */
static void parses_numpy_files(void **state)
{
    (void)state;
    la_array a;
    const char *why = NULL;
    size_t size;
    char *img;

    double scalar = 2.5;
    img = with_data(f64_scalar, sizeof f64_scalar - 1, &scalar, sizeof scalar, &size);
    assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
    expect_shape(&a, LA_NPY_F64, 0, NULL, 1);
    assert_true(((double *)a.data)[0] == 2.5);
    la_array_free(&a);
    free(img);

    float vec[] = {0, 1, 2};
    img = with_data(f32_vec, sizeof f32_vec - 1, vec, sizeof vec, &size);
    assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
    expect_shape(&a, LA_NPY_F32, 1, (size_t[]){3}, 3);
    assert_memory_equal(a.data, vec, sizeof vec);
    la_array_free(&a);
    free(img);

    int32_t mat[] = {-2, -1, 0, 1, 2, 3};
    img = with_data(i32_2x3, sizeof i32_2x3 - 1, mat, sizeof mat, &size);
    assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
    expect_shape(&a, LA_NPY_I32, 2, (size_t[]){2, 3}, 6);
    assert_memory_equal(a.data, mat, sizeof mat);
    la_array_free(&a);
    free(img);

    int64_t quad[16];
    for (int i = 0; i < 16; i++)
        quad[i] = (int64_t)(i - 8) * 1000000000000;
    img = with_data(i64_4d, sizeof i64_4d - 1, quad, sizeof quad, &size);
    assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
    expect_shape(&a, LA_NPY_I64, 4, (size_t[]){2, 1, 2, 4}, 16);
    assert_memory_equal(a.data, quad, sizeof quad);
    la_array_free(&a);
    free(img);

    img = with_data(f64_empty, sizeof f64_empty - 1, NULL, 0, &size);
    assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
    expect_shape(&a, LA_NPY_F64, 2, (size_t[]){0, 3}, 0);
    la_array_free(&a);
    assert_null(a.data);
    la_array_free(&a); /* twice is fine */
    free(img);

    float pair[] = {1.5f, -2.0f};
    const char *versions[] = {f32_v2, f32_v3};
    for (int v = 0; v < 2; v++) {
        img = with_data(versions[v], sizeof f32_v2 - 1, pair, sizeof pair, &size);
        assert_int_equal(la_npy_parse(img, size, &a, &why), LA_OK);
        expect_shape(&a, LA_NPY_F32, 1, (size_t[]){2}, 2);
        assert_memory_equal(a.data, pair, sizeof pair);
        la_array_free(&a);
        free(img);
    }
}

/* ---------------------------------------------------------------- files */

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/test_npy.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

/* Removes tmpdir and the plain files in it (the tests make nothing deeper). */
static int remove_tmpdir(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    if (!d) return -1;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        remove(path);
    }
    closedir(d);
    return rmdir(tmpdir);
}

/* Entries of tmpdir whose name contains part. */
static int count_entries(const char *part)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, part)) n++;
    closedir(d);
    return n;
}

static char *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = tu_alloc(1 << 16);
    *size = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

/* la_npy_write produces exactly NumPy's bytes for the same arrays. */
static void writes_numpy_bytes(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/numpy.npy", tmpdir);
    int64_t quad[16];
    for (int i = 0; i < 16; i++)
        quad[i] = (int64_t)(i - 8) * 1000000000000;
    double scalar = 2.5;
    float vec[] = {0, 1, 2};
    int32_t mat[] = {-2, -1, 0, 1, 2, 3};
    double none[1] = {0};
    struct {
        const char *header;
        size_t header_len;
        la_array a;
    } cases[] = {
        {f64_scalar, sizeof f64_scalar - 1, {LA_NPY_F64, 0, {0}, 1, &scalar}},
        {f32_vec, sizeof f32_vec - 1, {LA_NPY_F32, 1, {3}, 3, vec}},
        {i32_2x3, sizeof i32_2x3 - 1, {LA_NPY_I32, 2, {2, 3}, 6, mat}},
        {i64_4d, sizeof i64_4d - 1, {LA_NPY_I64, 4, {2, 1, 2, 4}, 16, quad}},
        {f64_empty, sizeof f64_empty - 1, {LA_NPY_F64, 2, {0, 3}, 0, none}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        assert_int_equal(la_npy_write(path, &cases[c].a), LA_OK);
        size_t size, data_bytes = cases[c].a.count * la_npy_dtype_size(cases[c].a.dtype);
        char *got = read_whole(path, &size);
        assert_int_equal(size, cases[c].header_len + data_bytes);
        assert_memory_equal(got, cases[c].header, cases[c].header_len);
        if (data_bytes) assert_memory_equal(got + cases[c].header_len, cases[c].a.data, data_bytes);
        free(got);
    }

    /* headers for huge shapes (zero elements, so no data) */
    la_array long_dim = {LA_NPY_F32, 3, {1234567890123, 0, 2}, 0, vec};
    la_array eight = {LA_NPY_F32, 8, {123456789, 0}, 0, vec};
    for (int i = 2; i < 8; i++)
        eight.shape[i] = 123456789;
    const la_array *big[] = {&long_dim, &eight};
    const char *big_header[] = {f32_long_dim, f32_eight_dims};
    size_t big_len[] = {sizeof f32_long_dim - 1, sizeof f32_eight_dims - 1};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(la_npy_write(path, big[c]), LA_OK);
        size_t size;
        char *got = read_whole(path, &size);
        assert_int_equal(size, big_len[c]);
        assert_memory_equal(got, big_header[c], size);
        free(got);
    }
    assert_int_equal(sizeof f32_long_dim - 1, 128);
    assert_int_equal(sizeof f32_eight_dims - 1, 192);
    assert_int_equal(count_entries(".tmp."), 0);
}

static la_npy_dtype all_dtypes[] = {LA_NPY_F32, LA_NPY_F64,  LA_NPY_I32, LA_NPY_I64,
                                    LA_NPY_F16, LA_NPY_BF16, LA_NPY_BOOL};

/* Every dtype and a range of shapes (scalar, empty, 1-D to 8-D) survive write + read. */
static void round_trip(void **state)
{
    (void)state;
    static const struct {
        int ndim;
        size_t shape[LA_NPY_MAX_DIMS];
    } shapes[] = {
        {0, {0}},          {1, {5}}, {2, {3, 4}},    {3, {2, 3, 7}},
        {4, {2, 3, 4, 5}}, {1, {0}}, {3, {2, 0, 3}}, {8, {1, 2, 1, 2, 1, 2, 1, 3}},
        {2, {1, 1000}},
    };
    tu_rng rng = tu_rng_for("round_trip");
    char path[128];
    snprintf(path, sizeof path, "%s/round.npy", tmpdir);
    for (size_t t = 0; t < sizeof all_dtypes / sizeof all_dtypes[0]; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            la_array a = {all_dtypes[t], shapes[s].ndim, {0}, 1, NULL};
            for (int i = 0; i < a.ndim; i++) {
                a.shape[i] = shapes[s].shape[i];
                a.count *= a.shape[i];
            }
            size_t bytes = a.count * la_npy_dtype_size(a.dtype);
            unsigned char *data = tu_alloc(bytes + 1);
            for (size_t i = 0; i < bytes; i++)
                data[i] = (unsigned char)tu_next(&rng);
            a.data = data;
            assert_int_equal(la_npy_write(path, &a), LA_OK);

            la_array back;
            const char *why = NULL;
            assert_int_equal(la_npy_read(path, &back, &why), LA_OK);
            expect_shape(&back, a.dtype, a.ndim, a.shape, a.count);
            if (bytes) assert_memory_equal(back.data, data, bytes);
            la_array_free(&back);

            /* the header is NumPy's: data starts at a multiple of 64 bytes */
            size_t size;
            char *img = read_whole(path, &size);
            assert_int_equal((size - bytes) % 64, 0);
            assert_int_equal(img[size - bytes - 1], '\n');
            free(img);
            free(data);
        }
    }
    assert_int_equal(count_entries(".tmp."), 0);
}

/* Spacing, quotes, key order and the '=' / '|' byte orders NumPy also accepts. */
static void tolerant_headers(void **state)
{
    (void)state;
    static const char *dicts[] = {
        "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
        "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(2,)}",
        "{ 'descr' : '=f4' , 'fortran_order' : False , 'shape' : ( 2 , ) , }",
        "{'descr': '|f4', 'fortran_order': False, 'shape': (2,),}",
    };
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
        char img[256];
        size_t len = strlen(dicts[i]);
        memcpy(img, "\x93NUMPY\x01\x00", 8);
        img[8] = (char)(len + 1);
        img[9] = 0;
        memcpy(img + 10, dicts[i], len);
        img[10 + len] = '\n';
        float pair[] = {1, 2};
        memcpy(img + 11 + len, pair, sizeof pair);
        la_array a;
        const char *why = NULL;
        assert_int_equal(la_npy_parse(img, 11 + len + sizeof pair, &a, &why), LA_OK);
        expect_shape(&a, LA_NPY_F32, 1, (size_t[]){2}, 2);
        la_array_free(&a);
    }
}

/* ---------------------------------------------------------------- malformed files */

/* One malformed image: version major, the dict text (padded here as NumPy pads it),
 * and how many data bytes follow; or, when raw_len is set, raw bytes taken as is. */
typedef struct {
    const char *name;
    int major;
    const char *dict;
    size_t data_bytes;
    const char *raw;
    size_t raw_len;
    la_status expect;
    const char *why_part; /* must appear in *why */
} bad_case;

#define VALID_F4_3 "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
#define RAW(s) 0, NULL, 0, s, sizeof s - 1

/* A well-formed f32 (3,) file, for the truncation cases. */
#define GOOD_FILE                                                                                  \
    "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"           \
    "                                                            \n"                               \
    "\0\0\0\0\0\0\0\0\0\0\0\0"

static const bad_case bad_cases[] = {
    {"empty file", RAW(""), LA_EFORMAT, "not a .npy file"},
    {"bad magic", RAW("\x93NUMPX\x01\x00\x10\x00{}            \n"), LA_EFORMAT, "bad magic"},
    {"not npy at all", RAW("hello, world\n"), LA_EFORMAT, "bad magic"},
    {"version 4.0", 4, VALID_F4_3, 12, NULL, 0, LA_EFORMAT, "version"},
    {"version 1.1", RAW("\x93NUMPY\x01\x01\x10\x00{}             \n"), LA_EFORMAT, "version"},
    {"truncated in magic", RAW("\x93NUM"), LA_EFORMAT, "truncated"},
    {"truncated before header length", RAW("\x93NUMPY\x01\x00\x76"), LA_EFORMAT,
     "truncated before the header length"},
    {"truncated 2.0 header length", RAW("\x93NUMPY\x02\x00\x76\x00\x00"), LA_EFORMAT,
     "truncated before the header length"},
    {"truncated header", 0, NULL, 0, GOOD_FILE, 50, LA_EFORMAT, "truncated header"},
    {"lying header length (too long)",
     RAW("\x93NUMPY\x01\x00\xff\xff{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
         "\n\0\0\0\0\0\0\0\0\0\0\0\0"),
     LA_EFORMAT, "truncated header"},
    {"lying 2.0 header length (4 GiB)",
     RAW("\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4', 'fortran_order': False, "
         "'shape': (3,), }\n"),
     LA_EFORMAT, "truncated header"},
    {"lying header length (too short)",
     RAW("\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
         "\n\0\0\0\0\0\0\0\0\0\0\0\0"),
     LA_EFORMAT, "newline"},
    {"header without newline",
     RAW("\x93NUMPY\x01\x00\x3b\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
         " \0\0\0\0\0\0\0\0\0\0\0\0"),
     LA_EFORMAT, "newline"},
    {"fortran order", 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48, NULL, 0,
     LA_EFORMAT, "Fortran order"},
    {"fortran_order not a bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", 12,
     NULL, 0, LA_EFORMAT, "fortran_order"},
    {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12, NULL, 0,
     LA_EDTYPE, "big-endian"},
    {"uint8", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 3, NULL, 0, LA_EDTYPE,
     "unsupported dtype"},
    {"little uint8", 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", 3, NULL, 0,
     LA_EDTYPE, "unsupported dtype"},
    {"bool of 2 bytes", 1, "{'descr': '|b2', 'fortran_order': False, 'shape': (3,), }", 6, NULL, 0,
     LA_EDTYPE, "unsupported dtype"},
    {"complex64", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24, NULL, 0,
     LA_EDTYPE, "unsupported dtype"},
    {"void of 4 bytes", 1, "{'descr': '|V4', 'fortran_order': False, 'shape': (3,), }", 12, NULL, 0,
     LA_EDTYPE, "unsupported dtype"},
    {"big-endian float16", 1, "{'descr': '>f2', 'fortran_order': False, 'shape': (3,), }", 6, NULL,
     0, LA_EDTYPE, "big-endian"},
    {"object", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 24, NULL, 0,
     LA_EDTYPE, "unsupported dtype"},
    {"structured", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12,
     NULL, 0, LA_EDTYPE, "structured"},
    {"descr not a string", 1, "{'descr': 4, 'fortran_order': False, 'shape': (3,), }", 12, NULL, 0,
     LA_EFORMAT, "descr"},
    {"negative dimension", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0, NULL,
     0, LA_EFORMAT, "negative"},
    {"non-integer dimension", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }", 12,
     NULL, 0, LA_EFORMAT, "integers"},
    {"string dimension", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ('3',), }", 12, NULL,
     0, LA_EFORMAT, "integers"},
    {"shape (3) is not a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12,
     NULL, 0, LA_EFORMAT, "tuple"},
    {"shape is a list", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", 12, NULL, 0,
     LA_EFORMAT, "tuple"},
    {"shape missing comma", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3 1), }", 12,
     NULL, 0, LA_EFORMAT, "shape"},
    {"nine dimensions", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4, NULL, 0,
     LA_EFORMAT, "more than 8"},
    {"dimension beyond size_t", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0, NULL, 0,
     LA_EOVERFLOW, "size_t"},
    {"shape product overflows", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }", 0, NULL, 0,
     LA_EOVERFLOW, "overflows"},
    {"bytes overflow", 1,
     "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0, NULL, 0,
     LA_EOVERFLOW, "overflows"},
    {"data too short", 1, VALID_F4_3, 8, NULL, 0, LA_EFORMAT, "data is 8 bytes, shape needs 12"},
    {"data too long", 1, VALID_F4_3, 13, NULL, 0, LA_EFORMAT, "data is 13 bytes, shape needs 12"},
    {"no data for a scalar", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 0, NULL,
     0, LA_EFORMAT, "data is 0 bytes, shape needs 8"},
    {"missing shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 12, NULL, 0, LA_EFORMAT,
     "lacks 'shape'"},
    {"missing descr", 1, "{'fortran_order': False, 'shape': (3,), }", 12, NULL, 0, LA_EFORMAT,
     "lacks 'descr'"},
    {"missing fortran_order", 1, "{'descr': '<f4', 'shape': (3,), }", 12, NULL, 0, LA_EFORMAT,
     "lacks 'fortran_order'"},
    {"empty dict", 1, "{}", 0, NULL, 0, LA_EFORMAT, "lacks"},
    {"duplicate key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (3,), }",
     12, NULL, 0, LA_EFORMAT, "duplicate"},
    {"unexpected key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1, }",
     12, NULL, 0, LA_EFORMAT, "unexpected key"},
    {"garbage after dict", 1, VALID_F4_3 " junk", 12, NULL, 0, LA_EFORMAT, "garbage"},
    {"not a dict", 1, "('descr', '<f4')", 12, NULL, 0, LA_EFORMAT, "not a Python dict"},
    {"unterminated string", 1, "{'descr: '<f4', 'fortran_order': False, 'shape': (3,)}", 12, NULL,
     0, LA_EFORMAT, "malformed"},
    {"missing colon", 1, "{'descr' '<f4', 'fortran_order': False, 'shape': (3,)}", 12, NULL, 0,
     LA_EFORMAT, "malformed"},
    {"unclosed dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12, NULL, 0,
     LA_EFORMAT, "malformed"},
};

/* Builds the image of a bad_case: NumPy's padding, then data_bytes zero bytes. */
static char *build_image(const bad_case *c, size_t *size)
{
    if (c->raw) {
        size_t n = c->raw_len;
        char *img = tu_alloc(n + 1);
        memcpy(img, c->raw, n);
        *size = n;
        return img;
    }
    size_t dict_len = strlen(c->dict), preamble = c->major == 1 ? 10 : 12;
    size_t text = dict_len + 1, pad = 64 - (preamble + text) % 64;
    size_t header_len = text + pad;
    char *img = tu_alloc(preamble + header_len + c->data_bytes + 1);
    memcpy(img, "\x93NUMPY", 6);
    img[6] = (char)c->major;
    img[7] = 0;
    for (size_t i = 0; i < preamble - 8; i++)
        img[8 + i] = (char)(header_len >> (8 * i));
    memcpy(img + preamble, c->dict, dict_len);
    memset(img + preamble + dict_len, ' ', pad);
    img[preamble + header_len - 1] = '\n';
    memset(img + preamble + header_len, 0, c->data_bytes);
    *size = preamble + header_len + c->data_bytes;
    return img;
}

/* The case's status and reason, and an emptied output; also with why = NULL. */
static void refuses(void **state)
{
    const bad_case *c = *state;
    size_t size;
    char *img = build_image(c, &size);
    la_array a;
    memset(&a, 0x5a, sizeof a);
    const char *why = NULL;
    la_status st = la_npy_parse(img, size, &a, &why);
    if (st != c->expect || !why || !strstr(why, c->why_part))
        fail_msg("%s: status %s (want %s), why \"%s\" (want \"%s\")", c->name, la_strerror(st),
                 la_strerror(c->expect), why ? why : "(null)", c->why_part);
    assert_null(a.data);
    assert_int_equal(a.ndim, 0);
    assert_int_equal(la_npy_parse(img, size, &a, NULL), c->expect);
    free(img);
}

/* ---------------------------------------------------------------- I/O errors */

/* Reading a missing file or a directory: LA_EIO with a reason. */
static void read_errors(void **state)
{
    (void)state;
    la_array a;
    const char *why = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/absent.npy", tmpdir);
    assert_int_equal(la_npy_read(path, &a, &why), LA_EIO);
    assert_string_equal(why, "no such file");
    assert_null(a.data);
    why = NULL;
    assert_int_equal(la_npy_read(tmpdir, &a, &why), LA_EIO);
    assert_string_equal(why, "is a directory");
    assert_int_equal(la_npy_read(NULL, &a, &why), LA_EINVAL);
}

/* A write that cannot happen returns LA_EIO and leaves no file and no temporary. */
static void write_errors(void **state)
{
    (void)state;
    float vec[] = {1, 2, 3};
    la_array a = {LA_NPY_F32, 1, {3}, 3, vec};
    char path[160];
    struct stat sb;

    /* a folder that does not exist */
    snprintf(path, sizeof path, "%s/missing/out.npy", tmpdir);
    assert_int_equal(la_npy_write(path, &a), LA_EIO);
    assert_int_not_equal(stat(path, &sb), 0);

    /* the path is a directory: the rename fails, the temporary is removed */
    snprintf(path, sizeof path, "%s/adir", tmpdir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(la_npy_write(path, &a), LA_EIO);
    assert_int_equal(count_entries(".tmp."), 0);
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(rmdir(path), 0);

    /* an existing file survives a refused write untouched */
    snprintf(path, sizeof path, "%s/keep.npy", tmpdir);
    assert_int_equal(la_npy_write(path, &a), LA_OK);
    la_array bad = a;
    bad.count = 4; /* not the product of shape */
    assert_int_equal(la_npy_write(path, &bad), LA_EINVAL);
    bad = a;
    bad.data = NULL;
    assert_int_equal(la_npy_write(path, &bad), LA_EINVAL);
    bad = a;
    bad.dtype = (la_npy_dtype)7;
    assert_int_equal(la_npy_write(path, &bad), LA_EINVAL);
    bad = a;
    bad.ndim = LA_NPY_MAX_DIMS + 1;
    assert_int_equal(la_npy_write(path, &bad), LA_EINVAL);
    assert_int_equal(la_npy_write("", &a), LA_EINVAL);
    assert_int_equal(la_npy_write(NULL, &a), LA_EINVAL);
    la_array back;
    assert_int_equal(la_npy_read(path, &back, NULL), LA_OK);
    assert_memory_equal(back.data, vec, sizeof vec);
    la_array_free(&back);
    assert_int_equal(count_entries(".tmp."), 0);
}

/* ---------------------------------------------------------------- half precision */

/* A version 1.0 header of 128 bytes (as NumPy pads a short one) for descr and shape. */
static size_t header_v1(char *buf, const char *descr, const char *shape)
{
    char dict[118];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
    assert_true(n > 0 && n < 117);
    memcpy(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(buf + 10, ' ', 118);
    memcpy(buf + 10, dict, (size_t)n);
    buf[127] = '\n';
    return 128;
}

/* The value of IEEE binary16 bits from their fields, in float64 (ldexp, not bit moves). */
static double half_reference(uint16_t h)
{
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
    double magnitude;
    if (exponent == 0x1f)
        magnitude = fraction ? NAN : INFINITY;
    else if (exponent == 0)
        magnitude = ldexp(fraction, -24); /* subnormal: fraction · 2^(1 − 15 − 10) */
    else
        magnitude = ldexp(1024 + fraction, exponent - 15 - 10);
    return sign ? -magnitude : magnitude;
}

/* The value of bfloat16 bits (sign, 8-bit exponent of bias 127, 7-bit fraction). */
static double bfloat16_reference(uint16_t h)
{
    const int sign = h >> 15, exponent = (h >> 7) & 0xff, fraction = h & 0x7f;
    double magnitude;
    if (exponent == 0xff)
        magnitude = fraction ? NAN : INFINITY;
    else if (exponent == 0)
        magnitude = ldexp(fraction, -133); /* subnormal: fraction · 2^(1 − 127 − 7) */
    else
        magnitude = ldexp(128 + fraction, exponent - 127 - 7);
    return sign ? -magnitude : magnitude;
}

/* Every one of the 65536 bit patterns of float16 ('<f2') and bfloat16 ('<V2', '|V2',
 * '=V2'), read from a file image and widened by la_array_to_f32, equals its value
 * computed from the fields: subnormals, ±0, ±inf exactly, NaN as a NaN of the same sign
 * with its payload at the top of float32's fraction. */
static void half_precision_widens_exactly(void **state)
{
    (void)state;
    static const struct {
        const char *descr;
        la_npy_dtype dtype;
        double (*reference)(uint16_t);
        int payload_shift; /* a NaN's fraction moves this far up */
    } kinds[] = {
        {"<f2", LA_NPY_F16, half_reference, 13},      {"=f2", LA_NPY_F16, half_reference, 13},
        {"<V2", LA_NPY_BF16, bfloat16_reference, 16}, {"|V2", LA_NPY_BF16, bfloat16_reference, 16},
        {"=V2", LA_NPY_BF16, bfloat16_reference, 16},
    };
    enum { COUNT = 65536 };
    char *img = tu_alloc(128 + 2 * COUNT);
    for (size_t t = 0; t < sizeof kinds / sizeof kinds[0]; t++) {
        size_t head = header_v1(img, kinds[t].descr, "(256, 256)");
        for (uint32_t i = 0; i < COUNT; i++) {
            img[head + 2 * i] = (char)(i & 0xff); /* little-endian */
            img[head + 2 * i + 1] = (char)(i >> 8);
        }
        la_array a;
        const char *why = NULL;
        assert_int_equal(la_npy_parse(img, head + 2 * COUNT, &a, &why), LA_OK);
        expect_shape(&a, kinds[t].dtype, 2, (size_t[]){256, 256}, COUNT);
        assert_int_equal(la_npy_dtype_size(a.dtype), 2);
        assert_int_equal(la_array_to_f32(&a), LA_OK);
        expect_shape(&a, LA_NPY_F32, 2, (size_t[]){256, 256}, COUNT);
        const float *x = a.data;
        size_t subnormals = 0, nans = 0;
        for (uint32_t i = 0; i < COUNT; i++) {
            const double want = kinds[t].reference((uint16_t)i);
            uint32_t bits;
            memcpy(&bits, &x[i], sizeof bits);
            if (isnan(want)) {
                nans++;
                if (!isnan(x[i]) || (bits >> 31) != (i >> 15) ||
                    (bits & 0x7fffff) != ((i & ((1u << (23 - kinds[t].payload_shift)) - 1))
                                          << kinds[t].payload_shift))
                    fail_msg("%s: bits 0x%04x: got 0x%08x, want a NaN of the same sign and "
                             "payload",
                             kinds[t].descr, i, bits);
                continue;
            }
            if (want != 0 && fabs(want) < 0x1p-14 && kinds[t].dtype == LA_NPY_F16) subnormals++;
            if ((double)x[i] != want || !signbit(x[i]) != !signbit(want))
                fail_msg("%s: bits 0x%04x: got %.9g, want %.9g", kinds[t].descr, i, (double)x[i],
                         want);
        }
        /* the patterns cover what they should: 2·(2^fraction_bits − 1) NaNs */
        assert_int_equal(nans, kinds[t].dtype == LA_NPY_F16 ? 2 * 1023 : 2 * 127);
        if (kinds[t].dtype == LA_NPY_F16) assert_int_equal(subnormals, 2 * 1023);
        la_array_free(&a);
    }
    free(img);

    /* float32 is left as it is; other dtypes and broken arrays are refused, untouched */
    float f[2] = {1.5f, -2};
    la_array a = {LA_NPY_F32, 1, {2}, 2, f};
    assert_int_equal(la_array_to_f32(&a), LA_OK);
    assert_ptr_equal(a.data, f);
    double d[2] = {1, 2};
    la_array b = {LA_NPY_F64, 1, {2}, 2, d};
    assert_int_equal(la_array_to_f32(&b), LA_EINVAL);
    assert_ptr_equal(b.data, d);
    assert_int_equal(b.dtype, LA_NPY_F64);
    la_array c = {LA_NPY_F16, 1, {2}, 2, NULL};
    assert_int_equal(la_array_to_f32(&c), LA_EINVAL);
    assert_int_equal(la_array_to_f32(NULL), LA_EINVAL);
}

int main(void)
{
    tu_init("test_npy");
    enum { n_bad = sizeof bad_cases / sizeof bad_cases[0] };
    struct CMUnitTest tests[7 + n_bad] = {
        cmocka_unit_test(parses_numpy_files),
        cmocka_unit_test(writes_numpy_bytes),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(tolerant_headers),
        cmocka_unit_test(read_errors),
        cmocka_unit_test(write_errors),
        cmocka_unit_test(half_precision_widens_exactly),
    };
    /* one named test per malformed file */
    for (size_t i = 0; i < n_bad; i++)
        tests[7 + i] =
            (struct CMUnitTest){bad_cases[i].name, refuses, NULL, NULL, (void *)&bad_cases[i]};
    return _cmocka_run_group_tests("test_npy", tests, 7 + n_bad, make_tmpdir, remove_tmpdir);
}
