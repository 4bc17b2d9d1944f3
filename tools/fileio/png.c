/* PNG pictures written row by row without holding them: stored (uncompressed) deflate blocks, so the
 * size is known in advance and no compressor is needed (used by the scatter plots and the previews). */
#define _POSIX_C_SOURCE 200809L

#include "png.h"
#include "points_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pcli_png {
    FILE *fp;
    int owns_fp; /* opened (and so closed) here */
    const char *path;
    size_t width, height;
    uint32_t crc, adler_a, adler_b;
    unsigned char block[65535]; /* the stored deflate block being filled */
    size_t used, left;          /* bytes in block; raw bytes still to come */
    int failed, error; /* error: errno of the first failed write */
};

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_add(uint32_t crc, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Bytes inside the IDAT chunk: they enter its CRC as they are written. */
static void idat_put(pcli_png *p, const unsigned char *d, size_t len)
{
    p->crc = crc_add(p->crc, d, len);
    if (fwrite(d, 1, len, p->fp) != len && !p->failed) {
        p->failed = 1;
        p->error = errno;
    }
}

static void flush_block(pcli_png *p)
{
    unsigned char head[5];
    size_t m = p->used;
    head[0] = p->left == 0 ? 1 : 0; /* BFINAL on the last block; BTYPE 00 = stored */
    head[1] = (unsigned char)(m & 0xff), head[2] = (unsigned char)(m >> 8);
    head[3] = (unsigned char)(~m & 0xff), head[4] = (unsigned char)((~m >> 8) & 0xff);
    idat_put(p, head, 5);
    idat_put(p, p->block, m);
    p->used = 0;
}

/* Raw (filtered) image bytes: Adler-32 over them, cut into stored blocks of 65535. */
static void raw_put(pcli_png *p, const unsigned char *d, size_t len)
{
    while (len) {
        size_t m = sizeof p->block - p->used;
        if (m > len)
            m = len;
        memcpy(p->block + p->used, d, m);
        for (size_t i = 0; i < m; i++) {
            p->adler_a = (p->adler_a + d[i]) % 65521;
            p->adler_b = (p->adler_b + p->adler_a) % 65521;
        }
        p->used += m, p->left -= m, d += m, len -= m;
        if (p->used == sizeof p->block || p->left == 0)
            flush_block(p);
    }
}

static int write_chunk(FILE *fp, const char *type, const unsigned char *data, size_t len)
{
    unsigned char head[8], tail[4];
    be32(head, (uint32_t)len);
    memcpy(head + 4, type, 4);
    be32(tail, ~crc_add(crc_add(~0u, head + 4, 4), data, len));
    return fwrite(head, 1, 8, fp) != 8 || (len && fwrite(data, 1, len, fp) != len) || fwrite(tail, 1, 4, fp) != 4;
}

/* Latin-1 text for a tEXt chunk; bytes that would not read back as such become '?'. */
static size_t title_text(unsigned char *out, size_t cap, const char *title)
{
    static const char keyword[] = "Title";
    size_t len = sizeof keyword; /* the NUL separator included */
    memcpy(out, keyword, sizeof keyword);
    for (const char *s = title; *s && len < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        out[len++] = (ch >= 32 && ch < 127) ? ch : '?';
    }
    return len;
}

int pcli_png_begin(pcli_png **out, FILE *fp, const char *path, size_t width, size_t height, const char *title,
                   char *err, size_t errsize)
{
    static const unsigned char signature[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
    *out = NULL;
    size_t raw = (1 + 3 * width) * height, blocks = (raw + 65534) / 65535;
    size_t zlen = 2 + 5 * blocks + raw + 4;
    if (width == 0 || height == 0 || zlen > 0x7fffffffu)
        return pcli_fail(err, errsize, "%s: picture size %zu x %zu is out of range", path, width, height);
    pcli_png *p = calloc(1, sizeof *p);
    if (!p)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    crc_init();
    p->fp = fp, p->path = path, p->width = width, p->height = height, p->left = raw, p->adler_a = 1;
    unsigned char ihdr[13] = {0}, text[512];
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8, ihdr[9] = 2; /* 8 bits, truecolour RGB; deflate, no filter method choice, no interlace */
    unsigned char head[8];
    be32(head, (uint32_t)zlen);
    memcpy(head + 4, "IDAT", 4);
    if (fwrite(signature, 1, 8, p->fp) != 8 || write_chunk(p->fp, "IHDR", ihdr, 13) ||
        (title && *title && write_chunk(p->fp, "tEXt", text, title_text(text, sizeof text, title))) ||
        fwrite(head, 1, 8, p->fp) != 8) {
        p->failed = 1;
        p->error = errno; /* ENOSPC and the like: pcli_png_close names it */
    }
    p->crc = crc_add(~0u, head + 4, 4);
    static const unsigned char zhead[2] = {0x78, 0x01}; /* deflate, 32 KiB window, a multiple of 31 */
    idat_put(p, zhead, 2);
    *out = p;
    return 0;
}

int pcli_png_open(pcli_png **out, const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    *out = NULL;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(errno));
    if (pcli_png_begin(out, fp, path, width, height, NULL, err, errsize)) {
        fclose(fp);
        return -1;
    }
    (*out)->owns_fp = 1;
    return 0;
}

int pcli_png_row(pcli_png *p, const uint8_t *rgb)
{
    static const unsigned char filter_none = 0;
    raw_put(p, &filter_none, 1);
    raw_put(p, rgb, 3 * p->width);
    return p->failed ? -1 : 0;
}

int pcli_png_close(pcli_png *p, char *err, size_t errsize)
{
    int rc = 0;
    unsigned char tail[8];
    if (p->failed) {
        /* reported below with the first write's error */
    } else if (p->left != 0) {
        rc = pcli_fail(err, errsize, "%s: internal error: picture rows missing", p->path);
    } else {
        be32(tail, p->adler_b << 16 | p->adler_a);
        idat_put(p, tail, 4);
        be32(tail, ~p->crc);
        if (fwrite(tail, 1, 4, p->fp) != 4 || write_chunk(p->fp, "IEND", NULL, 0)) {
            p->error = errno;
            p->failed = 1;
        }
    }
    errno = 0;
    int flush_failed = fflush(p->fp) != 0, flush_errno = errno;
    int close_failed = p->owns_fp && fclose(p->fp) != 0;
    if ((flush_failed || close_failed) && !p->failed) {
        p->failed = 1;
        p->error = flush_failed ? flush_errno : errno;
    }
    if (p->failed && rc == 0)
        rc = pcli_fail(err, errsize, "%s: write failed: %s", p->path, p->error ? strerror(p->error) : "I/O error");
    free(p);
    return rc;
}

