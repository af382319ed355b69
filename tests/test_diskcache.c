/* The on-disk cache and tuning tables:
   disk_cache_roundtrip   cold build stores, warm start loads; folder resolution, modes
   disk_cache_damaged     every kind of damaged, foreign or stale file is rebuilt
   disk_cache_unusable    folders that cannot be used fail no call and leave no error
   disk_cache_processes   16 processes on one empty cache: all succeed, one file per key
   disk_cache_invalidate  another driver, device, option set or source never loads
   tuning_file            the table forces its plans; damaged or stale tables are ignored
   Each case works in its own temporary CLNORM_CACHE_DIR; the child processes get a
   temporary POCL_CACHE_DIR too (PoCL reads it once per process, before the case
   starts, so in-process calls keep the runner's). On PoCL the library stores
   no binaries (reading one compiles every kernel; see cln_disk_wants_binaries), so
   there the "good" file is one with the right key and a payload the driver refuses. */
#define _XOPEN_SOURCE 700
#include "test.h"
#include "build_options.h"
#include "disk_cache.h"
#include "hash.h"
#include "kernels.h"
#include "profile.h"
#include "source.h"
#include "tuning.h"
#include "clnorm_advanced.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------- */
static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb, (void)flag, (void)f;
    return remove(path);
}

static void rm_rf(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static char *fresh_dir(void)
{
    char *d = strdup("/tmp/clnorm-dc-XXXXXX");
    if (!mkdtemp(d)) t_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    return d;
}

static const cln_profile *profile(void)
{
    const cln_profile *p = NULL;
    CHECK_ST(cln_profile_get(T.dev, &p), CLNORM_SUCCESS);
    return p;
}

/* Entries of dir (with . and ..) whose names start with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

static void stats(cln_disk_stats *s) { cln_disk_stats_get(s); }

/* Changes the first character of a profile string: "another driver", ... */
static void alter(char *field)
{
    field[0] = field[0] == 'x' ? 'y' : 'x';
}

/* The file of the program a call of dtype dt builds on this device. */
typedef struct prog_id {
    char options[512];
    uint64_t hash;
    size_t len;
    char name[64], path[4300], key[2048];
} prog_id;

static void prog_id_of(const cln_profile *p, clnorm_dtype dt, const char *dir, prog_id *id)
{
    char *src = NULL;
    /* one_op's kernel: the statistics, streamed. */
    cln_program_options(p, dt, p->best_path, CLN_K_SOFTMAX_STATS, id->options, sizeof id->options);
    CHECK_ST(cln_source_get(&src, &id->len), CLNORM_SUCCESS);
    id->hash = src ? cln_hash64(src, id->len, 0) : 0;
    free(src);
    cln_disk_name(p, "program", id->options, id->name, sizeof id->name);
    cln_disk_key(p, "program", id->options, id->hash, id->len, id->key, sizeof id->key);
    snprintf(id->path, sizeof id->path, "%s/%s", dir, id->name);
}

/* One checked operation: statistics (no register variant: compiles fast on PoCL). */
static clnorm_status one_op(clnorm_dtype dt)
{
    op_args a;
    float *x, *g;
    make_problem(&R, &a, OP_STATS, 16, 1000, &x, &g);
    a.dt = dt;
    clnorm_status st = check_op(&a, CLNORM_SUCCESS);
    free(x);
    free(g);
    return st;
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    *n = b ? fread(b, 1, (size_t)(len > 0 ? len : 0), f) : 0;
    fclose(f);
    return b;
}

static int write_all(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(b, 1, n, f);
    return fclose(f) != 0 || w != n ? -1 : 0;
}

static mode_t mode_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (sb.st_mode & 07777) : 0;
}

/* The file a call leaves for id: the real binary where the device stores them, else
   one written here with the right key and a payload no driver accepts. */
static void make_good_file(const cln_profile *p, clnorm_dtype dt, const char *dir, prog_id *id)
{
    prog_id_of(p, dt, dir, id);
    clnorm_release_cache(T.ctx);
    CHECK_ST(one_op(dt), CLNORM_SUCCESS);
    clnorm_release_cache(T.ctx); /* PoCL stores after the first run */
    if (!cln_stores_programs(p)) {
        static const char junk[] = "not a binary of any driver";
        CHECK(cln_disk_write(dir, id->name, id->key, junk, sizeof junk) == CLN_DISK_OK,
              "writing %s", id->path);
    }
    unsigned char *b = NULL;
    size_t n;
    CHECK(cln_disk_read(id->path, id->key, &b, &n) == CLN_DISK_OK, "no valid file %s after a %s "
          "call", id->path, dt_name(dt));
    free(b);
}

/* Devices whose program files are never read (Rusticl) get one check in place of the
   file cases: calls in every dtype succeed with the cache on, nothing is read or
   stored, and no program file appears. Returns 1 when it ran. */
static int no_program_files_case(const cln_profile *p, const char *what)
{
    if (cln_disk_reads_binaries(p)) return 0;
    char *dir = fresh_dir();
    t_config("CLNORM_CACHE_DIR", dir);
    cln_disk_stats s0, s1;
    clnorm_release_cache(T.ctx);
    stats(&s0);
    const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    for (size_t i = 0; i < COUNT_OF(dts); i++) CHECK_ST(one_op(dts[i]), CLNORM_SUCCESS);
    stats(&s1);
    CHECK(s1.hits == s0.hits && s1.misses == s0.misses && s1.stores == s0.stores &&
          s1.store_failures == s0.store_failures,
          "%s: program files used on %s (%lu hits, %lu misses, %lu stores)", what,
          p->platform_name, s1.hits - s0.hits, s1.misses - s0.misses, s1.stores - s0.stores);
    CHECK(count_files(dir, "prog-") == 0, "%s: %d program files in %s", what,
          count_files(dir, "prog-"), dir);
    NOTE("%s: %s reads and stores no program binaries (see cln_disk_reads_binaries)", what,
         p->platform_name);
    t_env_restore();
    clnorm_release_cache(T.ctx);
    rm_rf(dir);
    free(dir);
    return 1;
}

/* ---- disk_cache_roundtrip --------------------------------------------------------- */
void test_disk_cache_roundtrip(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    if (no_program_files_case(p, "disk_cache_roundtrip")) return;
    char *root = fresh_dir(), dir[4200], buf[4200];
    snprintf(dir, sizeof dir, "%s/a/b/clnorm", root); /* created on first store */
    t_config("CLNORM_CACHE_DIR", dir);
    int stores = cln_stores_programs(p); /* with the folder set: PoCL's depends on it */
    prog_id id;
    prog_id_of(p, CLNORM_F32, dir, &id);

    cln_disk_stats s0, s1, s2;
    clnorm_release_cache(T.ctx);
    stats(&s0);
    double t0 = t_now();
    CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
    double cold = t_now() - t0;
    /* PoCL stores a program once its first run has completed: at the next call, or
       here. */
    clnorm_release_cache(T.ctx);
    stats(&s1);
    CHECK(s1.misses == s0.misses + 1 && s1.hits == s0.hits, "cold start: %lu misses, %lu hits, "
          "expected 1 and 0", s1.misses - s0.misses, s1.hits - s0.hits);
    if (stores) {
        CHECK(s1.stores == s0.stores + 1, "cold start stored %lu files, expected 1",
              s1.stores - s0.stores);
        CHECK(count_files(dir, "prog-") == 1, "%d program files in %s, expected 1",
              count_files(dir, "prog-"), dir);
        CHECK(count_files(dir, ".tmp") == 0, "temporary files left in %s", dir);
        CHECK(mode_of(dir) == 0700, "cache folder mode %o, expected 700", (unsigned)mode_of(dir));
        snprintf(buf, sizeof buf, "%s/a", root);
        CHECK(mode_of(buf) == 0700, "created parent %s mode %o, expected 700", buf,
              (unsigned)mode_of(buf));
        CHECK(mode_of(id.path) == 0600, "file mode %o, expected 600", (unsigned)mode_of(id.path));
        unsigned char *b = NULL;
        size_t n;
        CHECK(cln_disk_load(p, id.options, id.hash, id.len, &b, &n) == CLN_DISK_OK,
              "stored file %s does not load", id.path);
        free(b);
    } else {
        CHECK(count_files(dir, "prog-") == 0, "a binary was stored on %s", p->platform_name);
        NOTE("%s stores no binaries: its own cache (POCL_CACHE_DIR) keeps builds", p->platform_name);
    }

    clnorm_release_cache(T.ctx);
    stats(&s1);
    t0 = t_now();
    CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
    double warm = t_now() - t0;
    stats(&s2);
    if (stores)
        CHECK(s2.hits == s1.hits + 1 && s2.misses == s1.misses && s2.stores == s1.stores,
              "warm start: %lu hits, %lu misses, %lu stores; expected 1, 0, 0",
              s2.hits - s1.hits, s2.misses - s1.misses, s2.stores - s1.stores);
    NOTE("first call after dropping the memory cache: cold %.3f s, warm %.3f s", cold, warm);

    /* Where the folder is when CLNORM_CACHE_DIR is unset, and "off". */
    t_config("CLNORM_CACHE_DIR", NULL);
    snprintf(buf, sizeof buf, "%s/xdg", root);
    t_config("XDG_CACHE_HOME", buf);
    char got[4200], want[4300];
    snprintf(want, sizeof want, "%s/xdg/clnorm", root);
    CHECK(cln_disk_dir(got, sizeof got, 1) == CLN_DISK_OK && !strcmp(got, want),
          "XDG_CACHE_HOME: folder \"%s\", expected \"%s\"", got, want);
    CHECK(mode_of(want) == 0700, "%s mode %o, expected 700", want, (unsigned)mode_of(want));
    t_config("XDG_CACHE_HOME", "relative/path"); /* the XDG rule: ignored */
    snprintf(buf, sizeof buf, "%s/home", root);
    t_config("HOME", buf);
    snprintf(want, sizeof want, "%s/home/.cache/clnorm", root);
    CHECK(cln_disk_dir(got, sizeof got, 0) == CLN_DISK_OK && !strcmp(got, want),
          "HOME: folder \"%s\", expected \"%s\"", got, want);
    t_config("CLNORM_CACHE_DIR", "off");
    CHECK(cln_disk_dir(got, sizeof got, 1) == CLN_DISK_OFF, "CLNORM_CACHE_DIR=off not off");
    rm_rf(root);
    free(root);
}

/* ---- disk_cache_damaged ------------------------------------------------------------ */
enum { D_HALF, D_HEADER, D_EMPTY, D_FLIP_PAYLOAD, D_FLIP_KEY, D_FLIP_SUM, D_MAGIC, D_VERSION,
       D_LENGTH, D_APPENDED, D_GARBAGE, D_OTHER_KEY, D_REFUSED, D_COUNT };
static const char *const damage_names[D_COUNT] = {
    "truncated to half", "truncated inside the header", "zero length",
    "flipped byte in the binary", "flipped byte in the key", "flipped byte in the checksum",
    "wrong magic", "older format version", "length field too large", "bytes appended",
    "random bytes", "another key's file renamed into place",
    "right key, binary the driver refuses"};

void test_disk_cache_damaged(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    if (no_program_files_case(p, "disk_cache_damaged")) return;
    char *dir = fresh_dir();
    t_config("CLNORM_CACHE_DIR", dir);
    int stores = cln_stores_programs(p); /* with the folder set: PoCL's depends on it */
    prog_id id, other;
    make_good_file(p, CLNORM_F32, dir, &id);
    size_t n_good = 0, n_other = 0;
    unsigned char *good = read_all(id.path, &n_good);
    /* Another key's file: the f16 program's, or one written with another key. */
    prog_id_of(p, CLNORM_F16, dir, &other);
    if (!stores || one_op(CLNORM_F16) != CLNORM_SUCCESS ||
        (clnorm_release_cache(T.ctx), access(other.path, F_OK) != 0))
        cln_disk_write(dir, other.name, other.key, "other", 5);
    unsigned char *foreign = read_all(other.path, &n_other);
    if (!CHECK(good && n_good > 40 && foreign, "no files to damage in %s", dir)) goto done;

    for (int k = 0; k < D_COUNT; k++) {
        if (k == D_REFUSED && strstr(p->platform_name, "rusticl")) {
            /* Only a file written on purpose has the right key and checksum and a
               foreign binary; Rusticl 22.3 aborts the process on one (program.rs:191
               "unknown version"). */
            NOTE("%s: not tried on Rusticl, which aborts on a binary it does not know",
                 damage_names[k]);
            continue;
        }
        unsigned char *b = malloc(n_good + 64);
        size_t n = n_good;
        memcpy(b, good, n_good);
        switch (k) {
        case D_HALF: n /= 2; break;
        case D_HEADER: n = 20; break;
        case D_EMPTY: n = 0; break;
        case D_FLIP_PAYLOAD: b[n - 1 - (n - 40) / 2] ^= 0x10; break;
        case D_FLIP_KEY: b[40] ^= 0x01; break;
        case D_FLIP_SUM: b[24] ^= 0x80; break;
        case D_MAGIC: b[0] = 'X'; break;
        case D_VERSION: b[8] = (unsigned char)(CLN_DISK_FORMAT - 1); break;
        case D_LENGTH: b[16] = (unsigned char)(b[16] + 1); break;
        case D_APPENDED: memset(b + n, 0, 64), n += 64; break;
        case D_GARBAGE: for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rng_u64(&R); break;
        case D_OTHER_KEY: free(b), b = malloc(n_other), memcpy(b, foreign, n_other), n = n_other; break;
        case D_REFUSED: break;
        }
        clnorm_release_cache(T.ctx); /* first: nothing may rewrite the file now */
        if (k == D_REFUSED) {
            static const char junk[] = "\x7f" "ELF but not really";
            cln_disk_write(dir, id.name, id.key, junk, sizeof junk);
        } else if (!CHECK(write_all(id.path, b, n) == 0, "writing %s", id.path)) {
            free(b);
            continue;
        }
        free(b);
        cln_disk_stats s0, s1;
        stats(&s0);
        clnorm_status st = one_op(CLNORM_F32);
        clnorm_release_cache(T.ctx); /* PoCL stores after the first run */
        stats(&s1);
        CHECK(st == CLNORM_SUCCESS, "%s: the call returned %s", damage_names[k],
              clnorm_status_string(st));
        if (k == D_REFUSED)
            CHECK(s1.hits == s0.hits + 1 && s1.refused == s0.refused + 1,
                  "%s: %lu loads, %lu refused by the driver; expected 1 and 1", damage_names[k],
                  s1.hits - s0.hits, s1.refused - s0.refused);
        else
            CHECK(s1.rejected == s0.rejected + 1 && s1.hits == s0.hits,
                  "%s: %lu files rejected, %lu loaded; expected 1 and 0", damage_names[k],
                  s1.rejected - s0.rejected, s1.hits - s0.hits);
        if (stores) {
            unsigned char *d = NULL;
            size_t dn;
            CHECK(s1.stores == s0.stores + 1, "%s: %lu stores, expected 1", damage_names[k],
                  s1.stores - s0.stores);
            CHECK(cln_disk_read(id.path, id.key, &d, &dn) == CLN_DISK_OK,
                  "%s: the file was not replaced by a valid one", damage_names[k]);
            free(d);
            /* The replaced binary loads. */
            clnorm_release_cache(T.ctx);
            stats(&s0);
            CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
            stats(&s1);
            CHECK(s1.hits == s0.hits + 1 && s1.refused == s0.refused,
                  "%s: the rebuilt file did not load", damage_names[k]);
        }
        CHECK(count_files(dir, ".tmp") == 0, "%s: temporary files left", damage_names[k]);
    }
done:
    free(good);
    free(foreign);
    rm_rf(dir);
    free(dir);
}

/* ---- disk_cache_unusable ----------------------------------------------------------- */
/* One call with the folder as set: it must succeed, with values right, and leave the
   last error as it was (a successful call records nothing). */
static void call_unharmed(const char *what)
{
    clnorm_matrix none = {NULL, 0, 0};
    CHECK_ST(clnorm_softmax(T.q, CLNORM_F32, 1, 0, none, none, CLNORM_SOFTMAX_AUTO, 0, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    char before[512];
    snprintf(before, sizeof before, "%s", clnorm_last_error());
    clnorm_release_cache(T.ctx);
    clnorm_status st = one_op(CLNORM_F32);
    CHECK(st == CLNORM_SUCCESS, "%s: the call returned %s: %s", what, clnorm_status_string(st),
          clnorm_last_error());
    CHECK(!strcmp(before, clnorm_last_error()), "%s: the last error changed from \"%s\" to "
          "\"%s\"", what, before, clnorm_last_error());
}

void test_disk_cache_unusable(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    int stores = cln_stores_programs(p);
    char *root = fresh_dir(), path[4200];
    cln_disk_stats s0, s1;

    /* A folder that cannot be created: a file is in the way. */
    snprintf(path, sizeof path, "%s/file", root);
    write_all(path, "x", 1);
    snprintf(path, sizeof path, "%s/file/sub/clnorm", root);
    t_config("CLNORM_CACHE_DIR", path);
    stats(&s0);
    call_unharmed("a file in the folder's path");
    stats(&s1);
    if (stores) CHECK(s1.store_failures > s0.store_failures, "no store failure counted");

    /* A read-only folder (root writes anywhere: use /proc/self, read-only to all). */
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/ro", root);
        mkdir(path, 0500);
    } else {
        snprintf(path, sizeof path, "/proc/self");
    }
    t_config("CLNORM_CACHE_DIR", path);
    call_unharmed("a read-only folder");

    /* A full disk: a file size limit makes writes fail part-way (EFBIG). The driver's
       own cache must not need to write then: build once with the cache off first.
       PoCL writes into its own cache even then, and clnorm stores nothing there. */
    if (!stores) {
        NOTE("full disk: not tried on %s, where clnorm writes nothing", p->platform_name);
        goto off;
    }
    t_config("CLNORM_CACHE_DIR", "off");
    clnorm_release_cache(T.ctx);
    CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
    snprintf(path, sizeof path, "%s/full", root);
    t_config("CLNORM_CACHE_DIR", path);
    struct rlimit old, small = {4096, 0};
    getrlimit(RLIMIT_FSIZE, &old);
    small.rlim_max = old.rlim_max;
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    stats(&s0);
    call_unharmed("a full disk");
    stats(&s1);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_sig);
    if (stores) CHECK(s1.store_failures == s0.store_failures + 1 && s1.stores == s0.stores,
                      "full disk: %lu stores failed, %lu succeeded; expected 1 and 0",
                      s1.store_failures - s0.store_failures, s1.stores - s0.stores);
    CHECK(count_files(path, "") <= 2, "full disk: %d entries in %s besides . and .., "
          "expected none (no partial or temporary file)", count_files(path, "") - 2, path);

off:
    /* Disabled: nothing written anywhere. */
    snprintf(path, sizeof path, "%s/home", root);
    mkdir(path, 0700);
    t_config("HOME", path);
    t_config("XDG_CACHE_HOME", NULL);
    t_config("CLNORM_CACHE_DIR", "off");
    stats(&s0);
    call_unharmed("CLNORM_CACHE_DIR=off");
    stats(&s1);
    CHECK(count_files(path, "") <= 2, "CLNORM_CACHE_DIR=off wrote into %s", path);
    CHECK(s1.hits + s1.misses + s1.rejected == s0.hits + s0.misses + s0.rejected &&
          s1.stores + s1.store_failures == s0.stores + s0.store_failures,
          "CLNORM_CACHE_DIR=off still used the disk");
    rm_rf(root);
    free(root);
}

/* ---- disk_cache_processes ---------------------------------------------------------- */
/* Starts n copies of the helper program at once on dir; returns how many failed. */
static int run_children(int n, const char *dir, const char *arg)
{
    char child[4200];
    if (!t_child_path(child, sizeof child)) return n;
    int gate[2];
    if (pipe(gate) != 0) return n;
    pid_t pids[32];
    for (int i = 0; i < n; i++) {
        char pocl[4300];
        snprintf(pocl, sizeof pocl, "%s/pocl", dir);
        pids[i] = fork();
        if (pids[i] == 0) {
            /* Only async-signal-safe calls until exec: wait for the gate to open. */
            char c;
            close(gate[1]);
            while (read(gate[0], &c, 1) < 0 && errno == EINTR) {}
            setenv("POCL_CACHE_DIR", pocl, 1); /* PoCL's own cache: this case's own */
            execl(child, child, T.spec ? T.spec : "", arg, (char *)NULL);
            _exit(127);
        }
    }
    close(gate[0]);
    close(gate[1]); /* everyone starts now */
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int status = 0;
        if (pids[i] < 0 || waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            failed++;
            t_fail(__FILE__, __LINE__, "process %d of %d (%s): %s %d", i, n, arg,
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        }
    }
    return failed;
}

void test_disk_cache_processes(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    if (no_program_files_case(p, "disk_cache_processes")) return;
    char *dir = fresh_dir();
    t_config("CLNORM_CACHE_DIR", dir);
    int stores = cln_stores_programs(p); /* with the folder set: PoCL's depends on it */
    prog_id id;
    prog_id_of(p, CLNORM_F32, dir, &id);
    /* One process fills the driver's own caches (its clnorm cache is a folder of its
       own), so that the 16 race on clnorm's cache and not on PoCL compiles: PoCL 3.1
       fails a build now and then, with no log, when several processes fill its cache
       at once. */
    run_children(1, dir, "prewarm");
    double t0 = t_now();
    run_children(16, dir, "cold");
    double cold = t_now() - t0;
    CHECK(count_files(dir, "prog-") == (stores ? 1 : 0), "%d program files after 16 processes, "
          "expected %d", count_files(dir, "prog-"), stores);
    CHECK(count_files(dir, ".tmp") == 0, "temporary files left in %s", dir);
    /* The device probe's answers, stored by the first process and read by the rest. */
    CHECK(count_files(dir, "probe-") == 1, "%d probe files after 16 processes, expected 1",
          count_files(dir, "probe-"));
    unsigned char *b = NULL;
    size_t n;
    if (stores)
        CHECK(cln_disk_read(id.path, id.key, &b, &n) == CLN_DISK_OK,
              "the file %s left by 16 processes is not valid", id.path);
    free(b);
    /* And a second wave finds it (the helper fails if it has to build). */
    t0 = t_now();
    run_children(4, dir, stores ? "warm" : "cold");
    NOTE("16 processes on an empty cache: %.2f s; 4 more on the filled one: %.2f s", cold,
         t_now() - t0);
    rm_rf(dir);
    free(dir);
}

/* ---- disk_cache_invalidate --------------------------------------------------------- */
/* Splits the assembled source back into its files (cln_source_get puts a #line
   before each) and writes them into dir with a comment added to the last one. */
static int write_sources(const char *dir)
{
    char *src;
    size_t len;
    if (cln_source_get(&src, &len)) return -1;
    int bad = 0;
    char *s = src;
    while (!bad && (s = strstr(s, "#line 1 \"")) != NULL) {
        char *name = s + 9, *q = strchr(name, '"'), *body = q ? strchr(q, '\n') : NULL;
        if (!body) { bad = 1; break; }
        *q = '\0';
        body++;
        char *next = strstr(body, "#line 1 \"");
        size_t n = next ? (size_t)(next - body) - 1 : strlen(body) - 1; /* less the '\n' */
        char path[4300];
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) { bad = 1; break; }
        FILE *f = fopen(path, "wb");
        bad = !f || fwrite(body, 1, n, f) != n;
        if (f && !next) fputs("\n/* edited: a changed source */\n", f);
        if (f) fclose(f);
        s = next ? next : body + n;
    }
    free(src);
    return bad ? -1 : 0;
}

void test_disk_cache_invalidate(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    if (no_program_files_case(p, "disk_cache_invalidate")) return;
    char *dir = fresh_dir();
    t_config("CLNORM_CACHE_DIR", dir);
    int stores = cln_stores_programs(p); /* with the folder set: PoCL's depends on it */
    prog_id id;
    make_good_file(p, CLNORM_F32, dir, &id);
    unsigned char *b = NULL;
    size_t n;
    CHECK(cln_disk_load(p, id.options, id.hash, id.len, &b, &n) == CLN_DISK_OK,
          "the file does not load for its own key");
    free(b);
    b = NULL;

    /* Each field of the key, changed alone, misses. */
    for (int k = 0; k < 8; k++) {
        cln_profile q = *p;
        const char *opts = id.options, *what = "";
        char other_opts[600];
        uint64_t h = id.hash;
        size_t len = id.len;
        switch (k) {
        case 0: alter(q.driver_version), what = "driver version"; break;
        case 1: alter(q.platform_version), what = "platform version"; break;
        case 2: alter(q.device_name), what = "device name"; break;
        case 3: alter(q.platform_name), what = "platform name"; break;
        case 4: alter(q.device_vendor), what = "device vendor"; break;
        case 5: snprintf(other_opts, sizeof other_opts, "%s -DX", id.options);
                opts = other_opts, what = "build options"; break;
        case 6: h ^= 1, what = "source hash"; break;
        case 7: len++, what = "source length"; break;
        }
        int r = cln_disk_load(&q, opts, h, len, &b, &n);
        CHECK(r != CLN_DISK_OK, "a file stored for one key loaded with another %s", what);
        free(b);
        b = NULL;
    }

    /* A changed source through the library: the same slot, rejected and replaced. */
    char kdir[4300];
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    mkdir(kdir, 0700);
    if (!CHECK(write_sources(kdir) == 0, "writing the kernel sources to %s", kdir)) goto done;
    t_config("CLNORM_KERNEL_DIR", kdir);
    cln_disk_stats s0, s1;
    clnorm_release_cache(T.ctx);
    stats(&s0);
    CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
    clnorm_release_cache(T.ctx); /* PoCL stores after the first run */
    stats(&s1);
    CHECK(s1.rejected == s0.rejected + 1 && s1.hits == s0.hits,
          "changed source: %lu files rejected, %lu loaded; expected 1 and 0",
          s1.rejected - s0.rejected, s1.hits - s0.hits);
    if (stores) {
        CHECK(s1.stores == s0.stores + 1, "changed source: not stored");
        CHECK(cln_disk_read(id.path, id.key, &b, &n) == CLN_DISK_BAD,
              "the old source's key still reads from %s", id.path);
        free(b);
    }
    t_config("CLNORM_KERNEL_DIR", NULL);
    clnorm_release_cache(T.ctx);
    stats(&s0);
    CHECK_ST(one_op(CLNORM_F32), CLNORM_SUCCESS);
    clnorm_release_cache(T.ctx);
    stats(&s1);
    if (stores)
        CHECK(s1.rejected == s0.rejected + 1 && s1.stores == s0.stores + 1,
              "back to the built-in source: %lu rejected, %lu stored; expected 1 and 1",
              s1.rejected - s0.rejected, s1.stores - s0.stores);
done:
    rm_rf(dir);
    free(dir);
}

/* ---- tuning_file ------------------------------------------------------------------- */
/* Whether the device's tuning table chose the plan of a call of (*op, dt, rows, cols)
   under the configuration now, as a plan query reports it; *pl receives the plan and
   *op the operation it resolved to. */
static int applied(cln_op *op, clnorm_dtype dt, size_t rows, size_t cols, clnorm_plan_info *pl)
{
    memset(pl, 0, sizeof *pl);
    if (!CHECK_ST(clnorm_plan_query(T.dev, NULL, (clnorm_op)*op, dt, rows, cols, pl),
                  CLNORM_SUCCESS))
        return 0;
    *op = (cln_op)pl->op;
    return pl->tuned;
}

static void check_softmax(clnorm_dtype dt, top op, size_t rows, size_t cols)
{
    op_args a;
    float *x, *g;
    make_problem(&R, &a, op, rows, cols, &x, &g);
    a.dt = dt;
    check_op(&a, CLNORM_SUCCESS);
    free(x);
    free(g);
}

void test_tuning_file(void)
{
    const cln_profile *p = profile();
    if (!p) return;
    char *dir = fresh_dir(), path[4300];
    t_config("CLNORM_CACHE_DIR", dir);
    t_config("CLNORM_TUNING", NULL);
    cln_tuning_reset();
    clnorm_plan_info pl;
    cln_op op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 256, 1024, &pl), "a table applied with no file");

    /* Shapes unlike the built-in ones but valid here. */
    size_t wg = p->max_wg >= 64 ? 32 : p->max_wg, max_wg = p->max_wg;
    cln_tune_entry e[3] = {
        {CLN_OP_SOFTMAX_ONLINE, CLNORM_F32, 1024, 256, CLN_OP_SOFTMAX_ONLINE, CLN_VAR_STREAM,
         p->best_path, wg, wg / 4 ? wg / 4 : 1, 0, 10.0, 12.0},
        {CLN_OP_SOFTMAX_AUTO, CLNORM_F32, 1024, 256, CLN_OP_SOFTMAX_ONLINE, CLN_VAR_STREAM,
         p->best_path, wg, wg, 0, 10.0, 12.0},
        {CLN_OP_RMSNORM, CLNORM_F32, 262144, 4, CLN_OP_RMSNORM, CLN_VAR_SPLIT, p->best_path,
         wg, wg, 8, 10.0, 12.0},
    };
    CHECK(cln_tuning_write(p, e, 3) == CLN_DISK_OK, "writing the tuning file into %s", dir);
    CHECK(cln_tuning_file(p, path, sizeof path, NULL, 0) == CLN_DISK_OK && access(path, F_OK) == 0,
          "no tuning file at %s", path);
    cln_tune_entry *back = NULL;
    size_t nback = 0;
    if (CHECK(cln_tuning_read(p, &back, &nback) == CLN_DISK_OK && nback == 3,
              "reading the table back: %zu entries", nback)) {
        for (size_t i = 0; i < 3; i++) {
            char l1[256], l2[256];
            cln_tuning_line(&e[i], l1, sizeof l1);
            cln_tuning_line(&back[i], l2, sizeof l2);
            CHECK(!strcmp(l1, l2), "entry %zu reads back as \"%s\", wrote \"%s\"", i, l2, l1);
        }
        free(back);
    }

    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(applied(&op, CLNORM_F32, 256, 1024, &pl) && pl.work_group == wg &&
          pl.items_per_row == e[0].team && pl.variant == CLNORM_VARIANT_STREAM,
          "the entry was not applied: wg %zu team %zu variant %d", pl.work_group,
          pl.items_per_row, (int)pl.variant);
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(applied(&op, CLNORM_F32, 300, 3000, &pl), "not applied within a factor of 4");
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 256, 100, &pl), "applied 10x from its columns");
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 8, 1024, &pl), "applied to 8 rows, tuned on 256");
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F16, 256, 1024, &pl), "applied to another dtype");
    op = CLN_OP_SOFTMAX_AUTO;
    CHECK(applied(&op, CLNORM_F32, 256, 1024, &pl) && op == CLN_OP_SOFTMAX_ONLINE,
          "softmax AUTO did not take the table's algorithm (op %s)", cln_op_name(op));
    op = CLN_OP_RMSNORM;
    CHECK(applied(&op, CLNORM_F32, 4, 262144, &pl) && pl.split == 8 &&
          pl.variant == CLNORM_VARIANT_SPLIT, "the split entry was not applied");
    t_config("CLNORM_WORK_GROUP", "64");
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 256, 1024, &pl) && pl.work_group == 64,
          "the table overrode CLNORM_WORK_GROUP");
    t_config("CLNORM_WORK_GROUP", NULL);
    t_config("CLNORM_TUNING", "off");
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 256, 1024, &pl), "CLNORM_TUNING=off applied the table");
    t_config("CLNORM_TUNING", NULL);

    /* The library runs the tuned plans, with right values. */
    check_softmax(CLNORM_F32, OP_SOFTMAX_ONLINE, 256, 1024);
    check_softmax(CLNORM_F32, OP_SOFTMAX_AUTO, 256, 1024);
    check_softmax(CLNORM_F32, OP_RMSNORM, 4, 262144);

    /* An entry this device cannot run is skipped, not failed. */
    cln_tune_entry big = e[0];
    big.wg = big.team = max_wg * 2;
    cln_tuning_write(p, &big, 1);
    op = CLN_OP_SOFTMAX_ONLINE;
    CHECK(!applied(&op, CLNORM_F32, 256, 1024, &pl), "an impossible entry was applied");
    check_softmax(CLNORM_F32, OP_SOFTMAX_ONLINE, 256, 1024);

    /* Damaged or stale tables are ignored. */
    for (int k = 0; k < 5; k++) {
        cln_tuning_write(p, e, 3);
        size_t n;
        unsigned char *b = read_all(path, &n);
        const char *what = "";
        if (!b) break;
        switch (k) {
        case 0: b[n / 2] ^= 4, what = "flipped byte"; write_all(path, b, n); break;
        case 1: what = "truncated"; write_all(path, b, n - 10); break;
        case 2: what = "zero length"; write_all(path, b, 0); break;
        case 3: {
            cln_profile q = *p;
            alter(q.driver_version);
            cln_tuning_write(&q, e, 3);
            what = "stale: another driver";
            break;
        }
        case 4: {
            char key[2048];
            cln_tuning_file(p, path, sizeof path, key, sizeof key);
            char dirbuf[4200], name[64];
            cln_disk_dir(dirbuf, sizeof dirbuf, 0);
            cln_disk_name(p, "tuning", NULL, name, sizeof name);
            cln_disk_write(dirbuf, name, key, "softmax-online f32 x\n", 21);
            what = "right key, a line that does not parse";
            break;
        }
        }
        free(b);
        cln_tuning_reset();
        op = CLN_OP_SOFTMAX_ONLINE;
        CHECK(!applied(&op, CLNORM_F32, 256, 1024, &pl), "%s tuning file applied", what);
        cln_tune_entry *t = NULL;
        size_t tn = 0;
        CHECK(cln_tuning_read(p, &t, &tn) != CLN_DISK_OK, "%s tuning file read as valid", what);
        free(t);
    }
    check_softmax(CLNORM_F32, OP_SOFTMAX_ONLINE, 256, 1024);
    cln_tuning_reset();
    rm_rf(dir);
    free(dir);
}
