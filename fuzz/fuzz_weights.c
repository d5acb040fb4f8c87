/* fuzz_weights.c — libFuzzer target for the weights folder loader: the input is cut into
 * .npy files, one per tensor of an encoder layer (each piece is a 2-byte little-endian
 * length, then that many bytes); tensors the input does not reach get a valid file of
 * D = 2, d_ff = 4, so the fuzzer can spoil one file among good ones. la_layer_weights_load
 * must load or refuse with a reason naming a file, never read out of bounds, leak or
 * crash. Built and run by `make fuzz` from lib/io/{weights,npy,outfile}.c and
 * lib/core/{status,problem}.c. */
#include "linattn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

/* A valid float32 .npy of shape (rows, cols) (cols 0: a vector) into buf; its size. */
static size_t good_npy(unsigned char *buf, size_t rows, size_t cols)
{
    char dict[128];
    int n = cols ? snprintf(dict, sizeof dict,
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }", rows,
                            cols)
                 : snprintf(dict, sizeof dict,
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu,), }", rows);
    size_t header = (size_t)n + 1, pad = 64 - (10 + header) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((header + pad) & 0xff);
    buf[9] = (unsigned char)((header + pad) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', pad);
    buf[10 + header + pad - 1] = '\n';
    size_t at = 10 + header + pad, count = rows * (cols ? cols : 1);
    for (size_t i = 0; i < count; i++) {
        float x = 0.25f * (float)(i % 5);
        memcpy(buf + at + 4 * i, &x, 4);
    }
    return at + 4 * count;
}

/* At exit: the folder and its files go. */
static void remove_dir(void)
{
    for (int t = 0; t < LA_W_COUNT; t++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.npy", dir, la_layer_tensor_key((la_layer_tensor)t));
        unlink(path);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/dev/shm/fuzz_weights.XXXXXX"); /* tmpfs if there is one */
        if (!mkdtemp(dir) && !mkdtemp(strcpy(dir, "/tmp/fuzz_weights.XXXXXX"))) abort();
        atexit(remove_dir);
    }
    const size_t D = 2, FF = 4;
    for (int t = 0; t < LA_W_COUNT; t++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.npy", dir, la_layer_tensor_key((la_layer_tensor)t));
        unsigned char good[512];
        const void *bytes;
        size_t len;
        if (size >= 2) { /* a piece of the input */
            len = (size_t)data[0] | (size_t)data[1] << 8;
            data += 2;
            size -= 2;
            if (len > size) len = size;
            bytes = data;
            data += len;
            size -= len;
        } else { /* the right shape for D = 2, d_ff = 4 (a decoder-only tensor: a vector) */
            size_t shape[2] = {D, 0};
            int ndim = 1;
            la_layer_tensor_shape((la_layer_tensor)t, D, FF, 0, shape, &ndim);
            len = good_npy(good, shape[0], ndim == 2 ? shape[1] : 0);
            bytes = good;
        }
        FILE *f = fopen(path, "wb");
        if (!f) abort();
        if (len && fwrite(bytes, 1, len, f) != len) abort();
        if (fclose(f) != 0) abort();
    }
    la_layer_weights w;
    la_load_error err;
    memset(&err, 0, sizeof err);
    la_status st = la_layer_weights_load(&w, LA_FLOAT32, 0, dir, "", &err);
    if (!la_strerror(st)) abort();
    if (st != LA_OK && (!err.why[0] || !err.path[0])) abort(); /* a refusal names a file */
    la_layer_weights_free(&w);
    la_layer_weights_free(&w);
    return 0;
}
