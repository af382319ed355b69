/* The kernel source: the .cl files embedded at build time, or read from
   $CLNORM_KERNEL_DIR for kernel development without rebuilding. */
#include "source.h"
#include "config.h"
#include "hash.h"
#include "status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cln_embedded { const char *name; const char *data; size_t len; };
extern const struct cln_embedded cln_embedded_sources[]; /* generated */

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
    if (!buf) {
        st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for kernel source");
        goto fail;
    }
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

/* The embedded source is assembled and hashed once, not per call (docs/DESIGN.md,
   'Host cost per call'). */
static pthread_mutex_t cln_embedded_lock = PTHREAD_MUTEX_INITIALIZER;
static char *cln_embedded_src;
static size_t cln_embedded_len;
static uint64_t cln_embedded_hash;
/* Builds using the embedded copy now, and a release that waits for them to end
   (clnorm_release_cache may run while other threads build). */
static unsigned cln_embedded_users;
static int cln_embedded_forgotten;

clnorm_status cln_source_for_build(char **src, size_t *len, uint64_t *hash, int *owned)
{
    /* A kernel folder is re-read at every call (the program is found by the source's
       hash), so that edits show up without a restart. */
    if (*cln_config_now()->pub.kernel_dir) {
        *owned = 1;
        clnorm_status st = cln_source_get(src, len);
        if (!st) *hash = cln_hash64(*src, *len, 0);
        return st;
    }
    pthread_mutex_lock(&cln_embedded_lock);
    if (!cln_embedded_src) {
        clnorm_status st = cln_source_get(&cln_embedded_src, &cln_embedded_len);
        if (st) {
            pthread_mutex_unlock(&cln_embedded_lock);
            return st;
        }
        cln_embedded_hash = cln_hash64(cln_embedded_src, cln_embedded_len, 0);
    }
    *owned = 0;
    cln_embedded_users++;
    *src = cln_embedded_src;
    *len = cln_embedded_len;
    *hash = cln_embedded_hash;
    pthread_mutex_unlock(&cln_embedded_lock);
    return CLNORM_SUCCESS;
}

void cln_source_done(char *src, int owned)
{
    if (owned) {
        free(src);
        return;
    }
    pthread_mutex_lock(&cln_embedded_lock);
    if (--cln_embedded_users == 0 && cln_embedded_forgotten) {
        free(cln_embedded_src);
        cln_embedded_src = NULL;
        cln_embedded_forgotten = 0;
    }
    pthread_mutex_unlock(&cln_embedded_lock);
}

void cln_source_forget(void)
{
    pthread_mutex_lock(&cln_embedded_lock);
    if (cln_embedded_users == 0) {
        free(cln_embedded_src);
        cln_embedded_src = NULL;
    } else {
        cln_embedded_forgotten = 1; /* the last build using it frees it */
    }
    pthread_mutex_unlock(&cln_embedded_lock);
}
