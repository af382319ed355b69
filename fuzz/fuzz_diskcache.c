/* fuzz_diskcache: the disk-cache file reader (src/diskcache.c). The input is a key and
   a file image; flags in the first byte repair the magic, the lengths or the checksum
   so that the fuzzer reaches every check. The image is read through a memfd, as a
   file, by cln_disk_read and cln_disk_inspect, and their verdicts are compared with
   an independent reading of the documented format:
     0 magic "CLNORM\x1a\n" | 8 format u32 | 12 key length u32 | 16 payload length u64
     | 24 FNV-1a 64 of bytes 0..23, key and payload | 32 key | payload (non-empty)
   A file is accepted only when all of it checks and the key is exactly the one asked
   for; the payload returned is then exactly the file's. With flag 0x10 the key and
   payload also go through cln_disk_write into a temporary folder and must read back. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char tmpdir[64];

static void remove_tmpdir(void) { rmdir(tmpdir); } /* empty: every file is unlinked */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/clnorm-fuzz-dc-XXXXXX");
    if (!mkdtemp(tmpdir)) abort();
    atexit(remove_tmpdir);
    return 0;
}

static uint64_t get(const uint8_t *d, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | d[i];
    return v;
}

static void put(uint8_t *d, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) d[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t sum(const uint8_t *img, size_t klen, size_t dlen)
{
    return cln_hash64(img + 32 + klen, dlen,
                      cln_hash64(img + 32, klen, cln_hash64(img, 24, 0)));
}

static int write_memfd(const uint8_t *img, size_t n, char *path, size_t plen)
{
    int fd = memfd_create("clnorm-fuzz", 0);
    if (fd < 0) abort();
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, img + off, n - off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
    snprintf(path, plen, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    uint8_t flags = fz_u8(&f);
    char key[256];
    fz_str(&f, key, 200);
    size_t klen_asked = strlen(key);
    size_t n = f.n;
    uint8_t *img = malloc(n ? n : 1);
    memcpy(img, f.p, n);
    /* Repairs, so that later checks are reached. */
    if (n >= 32) {
        if (flags & 1) {
            memcpy(img, "CLNORM\x1a\n", 8);
            put(img + 8, CLN_DISK_FORMAT, 4);
        }
        if (flags & 2) { /* lengths that add up, key from the input when it fits */
            size_t kl = klen_asked <= n - 32 ? klen_asked : (n - 32) / 2;
            if (flags & 8 && kl == klen_asked) memcpy(img + 32, key, kl);
            put(img + 12, kl, 4);
            put(img + 16, n - 32 - kl, 8);
        }
        if (flags & 4) {
            uint64_t kl = get(img + 12, 4), dl = get(img + 16, 8);
            if (kl <= n - 32 && dl == n - 32 - kl) put(img + 24, sum(img, (size_t)kl, (size_t)dl), 8);
        }
    }
    /* The format, read independently. */
    int valid = 0;
    size_t kl = 0, dl = 0;
    if (n >= 32 && !memcmp(img, "CLNORM\x1a\n", 8) && get(img + 8, 4) == CLN_DISK_FORMAT) {
        uint64_t k64 = get(img + 12, 4), d64 = get(img + 16, 8);
        if (k64 <= n - 32 && d64 == n - 32 - k64 && d64 != 0) {
            kl = (size_t)k64;
            dl = (size_t)d64;
            valid = sum(img, kl, dl) == get(img + 24, 8);
        }
    }
    int key_ok = valid && kl == klen_asked && !memcmp(img + 32, key, kl);

    char path[64];
    int fd = write_memfd(img, n, path, sizeof path);
    unsigned char *payload = NULL;
    size_t plen = 0;
    int r = cln_disk_read(path, key, &payload, &plen);
    FZ_ASSERT(r == CLN_DISK_OK || r == CLN_DISK_BAD, "read gave %d", r);
    FZ_ASSERT((r == CLN_DISK_OK) == key_ok, "reader says %d, format says valid %d key %d", r,
              valid, key_ok);
    if (r == CLN_DISK_OK) {
        FZ_ASSERT(plen == dl && !memcmp(payload, img + 32 + kl, dl), "payload differs");
        free(payload);
    }
    char *k = NULL;
    size_t dlen = 0;
    r = cln_disk_inspect(path, &k, &dlen);
    FZ_ASSERT((r == CLN_DISK_OK) == valid, "inspect says %d, format says %d", r, valid);
    if (r == CLN_DISK_OK) {
        FZ_ASSERT(dlen == dl && !memcmp(k, img + 32, kl) && k[kl] == '\0', "inspect differs");
        free(k);
    }
    close(fd);

    if ((flags & 0x10) && n > 0) {
        char name[32];
        snprintf(name, sizeof name, "f-%02x.bin", flags);
        r = cln_disk_write(tmpdir, name, key, img, n);
        FZ_ASSERT(r == CLN_DISK_OK, "write gave %d", r);
        char full[128];
        snprintf(full, sizeof full, "%s/%s", tmpdir, name);
        r = cln_disk_read(full, key, &payload, &plen);
        FZ_ASSERT(r == CLN_DISK_OK && plen == n && !memcmp(payload, img, n),
                  "written file does not read back (%d)", r);
        free(payload);
        unlink(full);
    }
    free(img);
    return 0;
}
