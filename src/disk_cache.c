/* The on-disk cache: program binaries and tuning tables, one file per key in the
   cache folder. A file is a fixed header, the full key text and the payload:

     0  8  magic "CLNORM\x1a\n"
     8  4  format version (CLN_DISK_FORMAT)       all integers little-endian
    12  4  key length
    16  8  payload length
    24  8  FNV-1a 64 of bytes 0..23, the key and the payload
    32     key text, then payload

   The file name is a hash of what identifies a slot (kind, library version,
   platform, device, options); the key inside holds everything that changes the
   content (driver, source, ...), so a stale file is found at the same name,
   rejected and replaced rather than left beside the new one. Nothing here records
   an error: every problem means "not cached". */
#define _POSIX_C_SOURCE 200809L
#include "disk_cache.h"
#include "config.h"
#include "hash.h"
#include "types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char cln_magic[8] = {'C', 'L', 'N', 'O', 'R', 'M', 0x1a, '\n'};
enum { CLN_HDR = 32 };
#define CLN_DISK_MAX ((size_t)1 << 30) /* no binary is near 1 GiB: refuse to read one */

static atomic_ulong cln_n_hits, cln_n_misses, cln_n_rejected, cln_n_refused, cln_n_stores,
    cln_n_store_failures;

void cln_disk_stats_get(cln_disk_stats *s)
{
    s->hits = atomic_load(&cln_n_hits);
    s->misses = atomic_load(&cln_n_misses);
    s->rejected = atomic_load(&cln_n_rejected);
    s->refused = atomic_load(&cln_n_refused);
    s->stores = atomic_load(&cln_n_stores);
    s->store_failures = atomic_load(&cln_n_store_failures);
}

/* Rusticl 22 neither: programs it rebuilds from its own binaries give wrong results
   at times, and it aborts the process on a binary it does not know (docs/DESIGN.md,
   'Driver quirks'). */
static int cln_is_rusticl(const cln_profile *p) { return !strcmp(p->platform_name, "rusticl"); }
int cln_disk_reads_binaries(const cln_profile *p) { return !cln_is_rusticl(p); }
int cln_disk_wants_binaries(const cln_profile *p)
{
    return p->pocl_major == 0 && !cln_is_rusticl(p);
}

void cln_disk_count_refused(void) { atomic_fetch_add(&cln_n_refused, 1); }

/* mkdir -p, 0700 for every folder it makes (the XDG rule for cache folders). */
static int cln_mkdirs(char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0) return S_ISDIR(sb.st_mode) ? 0 : -1;
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        int r = mkdir(path, 0700);
        *s = '/';
        if (r != 0 && errno != EEXIST) return -1;
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

int cln_disk_dir(char *buf, size_t len, int create)
{
    /* The process configuration works the folder out when it is set (config.c). */
    const cln_config *c = cln_config_now();
    size_t n = strlen(c->folder);
    if (c->disk != CLN_DISK_OK || len < 64 || n >= len - 64) return CLN_DISK_OFF;
    memcpy(buf, c->folder, n + 1);
    if (!create) return CLN_DISK_OK;
    if (cln_mkdirs(buf) != 0 || access(buf, W_OK | X_OK) != 0) return CLN_DISK_BAD;
    return CLN_DISK_OK;
}

void cln_disk_key(const cln_profile *p, const char *kind, const char *options,
                  uint64_t src_hash, size_t src_len, char *buf, size_t len)
{
    snprintf(buf, len,
             "clnorm %s\nformat %d\nlibrary %s\nplatform %s\nplatform-version %s\n"
             "device %s\ndevice-vendor %s\ndriver %s\noptions %s\nsource %016llx %zu\n",
             kind, CLN_DISK_FORMAT, clnorm_version(), p->platform_name, p->platform_version,
             p->device_name, p->device_vendor, p->driver_version, options ? options : "",
             (unsigned long long)src_hash, src_len);
}

void cln_disk_name(const cln_profile *p, const char *kind, const char *options, char *buf,
                   size_t len)
{
    char id[1024];
    snprintf(id, sizeof id, "%s\n%s\n%s\n%s\n%s\n", kind, clnorm_version(), p->platform_name,
             p->device_name, options ? options : "");
    snprintf(buf, len, "%s-%016llx.bin",
             !strcmp(kind, "tuning") ? "tune" : !strcmp(kind, "probe") ? "probe" : "prog",
             (unsigned long long)cln_hash64(id, strlen(id), 0));
}

static void cln_put(unsigned char *d, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) d[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t cln_get(const unsigned char *d, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | d[i];
    return v;
}

static uint64_t cln_sum(const unsigned char *hdr, const void *key, size_t klen,
                        const void *data, size_t dlen)
{
    return cln_hash64(data, dlen, cln_hash64(key, klen, cln_hash64(hdr, 24, 0)));
}

/* Reads a whole regular file of at most CLN_DISK_MAX bytes. */
static int cln_slurp(const char *path, unsigned char **out, size_t *n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? CLN_DISK_ABSENT : CLN_DISK_BAD;
    struct stat sb;
    unsigned char *buf = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < CLN_HDR ||
        (uint64_t)sb.st_size > CLN_DISK_MAX || !(buf = malloc((size_t)sb.st_size)))
        goto bad;
    size_t got = 0, want = (size_t)sb.st_size;
    while (got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) goto bad; /* shrank under us: treat as damaged */
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *n = want;
    return CLN_DISK_OK;
bad:
    free(buf);
    close(fd);
    return CLN_DISK_BAD;
}

/* Checks a file image: magic, version, lengths that add up exactly, checksum. */
static int cln_parse(const unsigned char *buf, size_t n, const char **key, size_t *klen,
                     const unsigned char **data, size_t *dlen)
{
    if (n < CLN_HDR || memcmp(buf, cln_magic, 8) != 0 ||
        cln_get(buf + 8, 4) != CLN_DISK_FORMAT)
        return CLN_DISK_BAD;
    uint64_t kl = cln_get(buf + 12, 4), dl = cln_get(buf + 16, 8);
    if (kl > n - CLN_HDR || dl != n - CLN_HDR - kl || dl == 0) return CLN_DISK_BAD;
    /* The key is text: a NUL byte in it was never written by this library. */
    if (memchr(buf + CLN_HDR, 0, (size_t)kl)) return CLN_DISK_BAD;
    if (cln_sum(buf, buf + CLN_HDR, (size_t)kl, buf + CLN_HDR + kl, (size_t)dl) !=
        cln_get(buf + 24, 8))
        return CLN_DISK_BAD;
    *key = (const char *)buf + CLN_HDR;
    *klen = (size_t)kl;
    *data = buf + CLN_HDR + kl;
    *dlen = (size_t)dl;
    return CLN_DISK_OK;
}

int cln_disk_read(const char *path, const char *key, unsigned char **data, size_t *len)
{
    unsigned char *buf;
    size_t n, klen, dlen;
    const char *k;
    const unsigned char *d;
    int r = cln_slurp(path, &buf, &n);
    if (r) return r;
    r = cln_parse(buf, n, &k, &klen, &d, &dlen);
    if (!r && (klen != strlen(key) || memcmp(k, key, klen) != 0)) r = CLN_DISK_BAD;
    if (!r) {
        /* The payload moves to the front so the caller frees one block. */
        memmove(buf, d, dlen);
        *data = buf;
        *len = dlen;
        return CLN_DISK_OK;
    }
    free(buf);
    return r;
}

int cln_disk_inspect(const char *path, char **key, size_t *data_len)
{
    unsigned char *buf;
    size_t n, klen;
    const char *k;
    const unsigned char *d;
    int r = cln_slurp(path, &buf, &n);
    if (r) return r;
    r = cln_parse(buf, n, &k, &klen, &d, data_len);
    if (!r && key) {
        memmove(buf, k, klen);
        buf[klen] = '\0'; /* klen < n: the header precedes it */
        *key = (char *)buf;
        return CLN_DISK_OK;
    }
    free(buf);
    return r;
}

static int cln_write_all(int fd, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1; /* full disk, file size limit, I/O error */
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int cln_disk_write(const char *dir, const char *name, const char *key, const void *data,
                   size_t len)
{
    char tmp[4200], path[4200];
    size_t klen = strlen(key);
    unsigned char hdr[CLN_HDR];
    if (!len || len > CLN_DISK_MAX) return CLN_DISK_BAD;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%.4s-XXXXXX", dir, name);
    /* A temporary file in the same folder, renamed into place: readers see the old
       file or the new one, never a part; racing writers all leave a whole file. */
    int fd = mkstemp(tmp);
    if (fd < 0) goto fail_count;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    memcpy(hdr, cln_magic, 8);
    cln_put(hdr + 8, CLN_DISK_FORMAT, 4);
    cln_put(hdr + 12, klen, 4);
    cln_put(hdr + 16, len, 8);
    cln_put(hdr + 24, cln_sum(hdr, key, klen, data, len), 8);
    int bad = cln_write_all(fd, hdr, CLN_HDR) || cln_write_all(fd, key, klen) ||
              cln_write_all(fd, data, len);
    if (close(fd) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        goto fail_count;
    }
    atomic_fetch_add(&cln_n_stores, 1);
    return CLN_DISK_OK;
fail_count:
    atomic_fetch_add(&cln_n_store_failures, 1);
    return CLN_DISK_BAD;
}

int cln_disk_load(const cln_profile *p, const char *options, uint64_t src_hash,
                  size_t src_len, unsigned char **bin, size_t *len)
{
    char dir[4096], name[64], path[4200], key[2048];
    int r = cln_disk_dir(dir, sizeof dir, 0);
    if (r) return r;
    cln_disk_name(p, "program", options, name, sizeof name);
    cln_disk_key(p, "program", options, src_hash, src_len, key, sizeof key);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    r = cln_disk_read(path, key, bin, len);
    atomic_fetch_add(r == CLN_DISK_OK ? &cln_n_hits
                     : r == CLN_DISK_ABSENT ? &cln_n_misses : &cln_n_rejected, 1);
    return r;
}

int cln_disk_store(const cln_profile *p, const char *options, uint64_t src_hash,
                   size_t src_len, const unsigned char *bin, size_t len)
{
    char dir[4096], name[64], key[2048];
    int r = cln_disk_dir(dir, sizeof dir, 1);
    if (r == CLN_DISK_OFF) return r;
    if (r) {
        atomic_fetch_add(&cln_n_store_failures, 1);
        return r;
    }
    cln_disk_name(p, "program", options, name, sizeof name);
    cln_disk_key(p, "program", options, src_hash, src_len, key, sizeof key);
    return cln_disk_write(dir, name, key, bin, len);
}
