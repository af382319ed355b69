/* fuzz_diskcache: the disk-cache file reader. The input is a key and a file image;
   flags in the first byte repair the magic, the lengths or the checksum so that the
   fuzzer reaches every check. The image is stored in a cache folder of its own and
   read by the library, and its verdicts are compared with an independent reading of
   the documented format (docs/DESIGN.md, 'Files and keys'):
     0 magic "CLNORM\x1a\n" | 8 format u32 | 12 key length u32 | 16 payload length u64
     | 24 checksum (fz_file_sum) | 32 key (text, no NUL byte) | payload (non-empty)
   - as a program file, clnorm_cache_inspect finds it whole (OK or STALE) exactly when
     the format says so, and then reports its payload length and the key's device;
   - with flag 0x10, as the tuning table of a device present, clnorm_tuning_read
     accepts it only when it is whole and its key is exactly the device's (flag 0x20
     puts the device's key in), and calls it stale when it is whole under another
     key, damaged otherwise. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64], prog_path[128], tune_path[4300];
static const clnorm_device_info *dev;
static char dev_key[2048]; /* the device's tuning-file key */
static size_t dev_key_len;

static void remove_tmpdir(void)
{
    unlink(prog_path);
    unlink(tune_path);
    rmdir(tmpdir);
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

static void write_file(const char *path, const uint8_t *img, size_t n)
{
    FILE *f = fopen(path, "wb");
    FZ_ASSERT(f && fwrite(img, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

/* The value of the key line "name value", into buf ("" when absent). */
static void key_field(const char *key, size_t klen, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    buf[0] = '\0';
    for (size_t i = 0; i < klen; i++) {
        if (i > 0 && key[i - 1] != '\n') continue;
        if (klen - i > n && !memcmp(key + i, name, n) && key[i + n] == ' ') {
            size_t e = i + n + 1;
            while (e < klen && key[e] != '\n') e++;
            snprintf(buf, len, "%.*s", (int)(e - i - n - 1), key + i + n + 1);
            return;
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/clnorm-fuzz-dc-XXXXXX");
    if (!mkdtemp(tmpdir)) abort();
    atexit(remove_tmpdir);
    snprintf(prog_path, sizeof prog_path, "%s/prog-fuzz.bin", tmpdir);
    clnorm_config c;
    clnorm_config_get(&c);
    clnorm_plan_hints_init(&c.hints);
    snprintf(c.cache_dir, sizeof c.cache_dir, "%s", tmpdir);
    FZ_ASSERT(clnorm_config_set(&c) == CLNORM_SUCCESS, "config: %s", clnorm_last_error());

    /* The device's tuning file and its key, from a table the library writes. */
    size_t max_wg;
    cl_ulong max_local;
    fz f = {NULL, 0};
    dev = fz_device(&f, &max_wg, &max_local);
    clnorm_tuning_entry e = {CLNORM_OP_RMSNORM, CLNORM_F32, 1024, 1024, CLNORM_OP_RMSNORM,
                             CLNORM_VARIANT_STREAM, CLNORM_REDUCTION_LOCAL, 64, 64, 0, 1, 2};
    FZ_ASSERT(clnorm_tuning_write(dev->device, &e, 1) == CLNORM_SUCCESS, "tuning write: %s",
              clnorm_last_error());
    clnorm_tuning_entry *got = NULL;
    size_t n = 0;
    FZ_ASSERT(clnorm_tuning_read(dev->device, &got, &n, tune_path, sizeof tune_path) ==
                  CLNORM_CACHE_FILE_OK && n == 1, "tuning table does not read back");
    free(got);
    uint8_t head[32];
    FILE *fp = fopen(tune_path, "rb");
    FZ_ASSERT(fp && fread(head, 1, 32, fp) == 32, "cannot read %s", tune_path);
    dev_key_len = (size_t)get(head + 12, 4);
    FZ_ASSERT(dev_key_len < sizeof dev_key && fread(dev_key, 1, dev_key_len, fp) == dev_key_len,
              "key of %zu bytes", dev_key_len);
    fclose(fp);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    uint8_t flags = fz_u8(&f);
    char key[2048];
    fz_str(&f, key, 200);
    if (flags & 0x20) memcpy(key, dev_key, dev_key_len + 1), key[dev_key_len] = '\0';
    size_t klen_asked = strlen(key);
    size_t n = f.n;
    if ((flags & 0x20) && (flags & 2)) n += klen_asked; /* room for the device's key */
    uint8_t *img = calloc(n ? n : 1, 1);
    memcpy(img, f.p, f.n);
    /* Repairs, so that later checks are reached. */
    if (n >= 32) {
        if (flags & 1) {
            memcpy(img, "CLNORM\x1a\n", 8);
            put(img + 8, 1, 4);
        }
        if (flags & 2) { /* lengths that add up, key from the input when it fits */
            size_t kl = klen_asked <= n - 32 ? klen_asked : (n - 32) / 2;
            if (flags & 8 && kl == klen_asked) memcpy(img + 32, key, kl);
            put(img + 12, kl, 4);
            put(img + 16, n - 32 - kl, 8);
        }
        if (flags & 4) {
            uint64_t kl = get(img + 12, 4), dl = get(img + 16, 8);
            if (kl <= n - 32 && dl == n - 32 - kl)
                put(img + 24, fz_file_sum(img, (size_t)kl, (size_t)dl), 8);
        }
    }
    /* The format, read independently. */
    int valid = 0;
    size_t kl = 0, dl = 0;
    if (n >= 32 && !memcmp(img, "CLNORM\x1a\n", 8) && get(img + 8, 4) == 1) {
        uint64_t k64 = get(img + 12, 4), d64 = get(img + 16, 8);
        if (k64 <= n - 32 && d64 == n - 32 - k64 && d64 != 0 && !memchr(img + 32, 0, k64)) {
            kl = (size_t)k64;
            dl = (size_t)d64;
            valid = fz_file_sum(img, kl, dl) == get(img + 24, 8);
        }
    }

    write_file(prog_path, img, n);
    clnorm_cache_file cf;
    clnorm_cache_file_status r = clnorm_cache_inspect("prog-fuzz.bin", 0, &cf);
    int whole = r == CLNORM_CACHE_FILE_OK || r == CLNORM_CACHE_FILE_STALE;
    FZ_ASSERT(whole || r == CLNORM_CACHE_FILE_DAMAGED, "inspect gave %d", (int)r);
    FZ_ASSERT(whole == valid, "inspect says %d, format says valid %d", (int)r, valid);
    if (whole) {
        char want[128];
        key_field((const char *)img + 32, kl, "device", want, sizeof want);
        FZ_ASSERT(cf.payload_bytes == dl && !strcmp(cf.kind, "program") &&
                      !strcmp(cf.device, want),
                  "inspect read %zu bytes of device \"%s\", format says %zu of \"%s\"",
                  cf.payload_bytes, cf.device, dl, want);
        FZ_ASSERT(cf.stale_reason && (r == CLNORM_CACHE_FILE_STALE) == (*cf.stale_reason != 0),
                  "stale reason \"%s\" with %d", cf.stale_reason ? cf.stale_reason : "(null)",
                  (int)r);
    }
    unlink(prog_path);

    if (flags & 0x10) {
        int key_ok = valid && kl == dev_key_len && !memcmp(img + 32, dev_key, kl);
        write_file(tune_path, img, n);
        clnorm_tuning_entry *e = NULL;
        size_t ne = 0;
        r = clnorm_tuning_read(dev->device, &e, &ne, NULL, 0);
        if (!valid) FZ_ASSERT(r == CLNORM_CACHE_FILE_DAMAGED, "tuning read of a damaged file: %d",
                              (int)r);
        else if (!key_ok) FZ_ASSERT(r == CLNORM_CACHE_FILE_STALE, "tuning read under another "
                                    "key: %d", (int)r);
        else FZ_ASSERT(r == CLNORM_CACHE_FILE_OK || r == CLNORM_CACHE_FILE_DAMAGED,
                       "tuning read under the device's key: %d", (int)r);
        free(e);
        unlink(tune_path);
    }
    free(img);
    return 0;
}
