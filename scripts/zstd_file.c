/* Compresses one file with libzstd's streaming API: for machines that have the library but not
 * the zstd command-line tool (the GPU image). Usage: zstd_file LEVEL IN OUT */
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

static int fail(const char* what, const char* detail) {
    fprintf(stderr, "zstd_file: %s: %s\n", what, detail);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 4) return fail("usage", "zstd_file LEVEL IN OUT");
    FILE* in = fopen(argv[2], "rb");
    if (!in) return fail("cannot open", argv[2]);
    FILE* out = fopen(argv[3], "wb");
    if (!out) return fail("cannot create", argv[3]);
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, atoi(argv[1]));
    const size_t in_size = ZSTD_CStreamInSize(), out_size = ZSTD_CStreamOutSize();
    char* in_buf = malloc(in_size);
    char* out_buf = malloc(out_size);
    if (!cctx || !in_buf || !out_buf) return fail("out of memory", argv[2]);
    for (;;) {
        const size_t n = fread(in_buf, 1, in_size, in);
        const ZSTD_EndDirective mode = n < in_size ? ZSTD_e_end : ZSTD_e_continue;
        ZSTD_inBuffer input = {in_buf, n, 0};
        int finished = 0;
        do {
            ZSTD_outBuffer output = {out_buf, out_size, 0};
            const size_t left = ZSTD_compressStream2(cctx, &output, &input, mode);
            if (ZSTD_isError(left)) return fail("compression failed", ZSTD_getErrorName(left));
            if (fwrite(out_buf, 1, output.pos, out) != output.pos) return fail("write failed", argv[3]);
            finished = mode == ZSTD_e_end ? left == 0 : input.pos == input.size;
        } while (!finished);
        if (mode == ZSTD_e_end) break;
    }
    if (ferror(in)) return fail("read failed", argv[2]);
    ZSTD_freeCCtx(cctx);
    free(in_buf);
    free(out_buf);
    fclose(in);
    return fclose(out) == 0 ? 0 : fail("write failed", argv[3]);
}
