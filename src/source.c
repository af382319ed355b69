/* The kernel source: the .cl files embedded at build time, or read from
   $CLNORM_KERNEL_DIR for kernel development without rebuilding. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cln_embedded { const char *name; const char *data; size_t len; };
extern const struct cln_embedded cln_embedded_sources[]; /* generated */

uint64_t cln_hash64(const void *data, size_t len, uint64_t seed)
{
    /* FNV-1a: enough to tell sources and options apart, not a security measure. */
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static clnorm_status cln_read_file(const char *dir, const char *name, char **out,
                                   size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cln_fail(CLNORM_BUILD_FAILED, "CLNORM_KERNEL_DIR: cannot open \"%s\"", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory reading \"%s\"", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return cln_fail(CLNORM_BUILD_FAILED, "CLNORM_KERNEL_DIR: cannot read \"%s\"", path);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return CLNORM_SUCCESS;
}

clnorm_status cln_source_get(char **src, size_t *len)
{
    const char *dir = cln_config_now()->pub.kernel_dir;
    size_t total = 0;
    char *parts[16] = {0};
    size_t lens[16] = {0};
    size_t n = 0;
    clnorm_status st = CLNORM_SUCCESS;
    for (; cln_embedded_sources[n].name && n < 16; n++) {
        if (dir && *dir) {
            st = cln_read_file(dir, cln_embedded_sources[n].name, &parts[n], &lens[n]);
            if (st) goto fail;
        } else {
            lens[n] = cln_embedded_sources[n].len;
        }
        total += lens[n] + 64;
    }
    char *buf = malloc(total + 1);
    if (!buf) { st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for kernel source"); goto fail; }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        /* A #line per file makes build logs name the real file and line. */
        off += (size_t)snprintf(buf + off, 64, "#line 1 \"%s\"\n", cln_embedded_sources[i].name);
        memcpy(buf + off, parts[i] ? parts[i] : cln_embedded_sources[i].data, lens[i]);
        off += lens[i];
        buf[off++] = '\n';
    }
    buf[off] = '\0';
    *src = buf;
    *len = off;
fail:
    for (size_t i = 0; i < n; i++) free(parts[i]);
    return st;
}
