/* `clnorm cache`: the on-disk cache folder: list its files, verify them against the
   devices and library present now, or clear it. */
#include "tool.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char cache_usage[] =
    "usage: clnorm cache [--verify] [--clear] [--help]\n"
    "\n"
    "Lists the files of the on-disk cache: kind (program binary, tuning table or the\n"
    "device probe's answers),\n"
    "device, driver, build options, size and age. The folder is $CLNORM_CACHE_DIR, else\n"
    "$XDG_CACHE_HOME/clnorm, else ~/.cache/clnorm; CLNORM_CACHE_DIR=off disables it.\n"
    "\n"
    "  --verify  also check every file: header and checksum (\"damaged\" otherwise), and\n"
    "            its key against this library, the kernel source built into it and the\n"
    "            devices present (\"stale\": the library would rebuild it). Exit status 1\n"
    "            when a file is damaged.\n"
    "  --clear   delete every cache file (and temporary files left by killed processes)\n";

/* The value of "name value" in a key text, into buf. */
static const char *key_field(const char *key, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    buf[0] = '\0';
    for (const char *l = key; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') {
            const char *e = strchr(l, '\n');
            size_t m = e ? (size_t)(e - l - n - 1) : strlen(l + n + 1);
            snprintf(buf, len, "%.*s", (int)m, l + n + 1);
            break;
        }
    return buf;
}

static void age_text(double s, char *buf, size_t len)
{
    if (s < 120) snprintf(buf, len, "%.0f s", s);
    else if (s < 7200) snprintf(buf, len, "%.0f min", s / 60);
    else if (s < 172800) snprintf(buf, len, "%.1f h", s / 3600);
    else snprintf(buf, len, "%.1f d", s / 86400);
}

/* Why the key would not match anything this process could build, or "" if it could.
   Options are not compared: they depend on probes; a file of options nobody asks for
   is never loaded, only left. */
static const char *stale_reason(const char *key, const cln_profile *devs, size_t ndev,
                                uint64_t src_hash, size_t src_len)
{
    char v[512], w[512], src[64];
    if (strcmp(key_field(key, "library", v, sizeof v), clnorm_version())) return "another library";
    key_field(key, "format", v, sizeof v);
    if (atoi(v) != CLN_DISK_FORMAT) return "another format";
    snprintf(src, sizeof src, "%016llx %zu", (unsigned long long)src_hash, src_len);
    /* The probe's answers depend on no kernel source. */
    if (strncmp(key, "clnorm probe\n", 13) && strcmp(key_field(key, "source", v, sizeof v), src))
        return "another kernel source";
    key_field(key, "device", v, sizeof v);
    key_field(key, "platform", w, sizeof w);
    int device = 0;
    for (size_t i = 0; i < ndev; i++) {
        if (strcmp(devs[i].device_name, v) || strcmp(devs[i].platform_name, w)) continue;
        device = 1;
        char d[512], pv[512];
        if (!strcmp(devs[i].driver_version, key_field(key, "driver", d, sizeof d)) &&
            !strcmp(devs[i].platform_version, key_field(key, "platform-version", pv, sizeof pv)))
            return "";
    }
    return device ? "another driver" : "no such device here";
}

int cmd_cache(int argc, char **argv)
{
    int verify = 0, clear = 0;
    for (int i = 1; i < argc; i++) {
        if (tool_is_help(argv[i])) {
            fputs(cache_usage, stdout);
            return TOOL_OK;
        } else if (!strcmp(argv[i], "--verify")) verify = 1;
        else if (!strcmp(argv[i], "--clear")) clear = 1;
        else {
            fprintf(stderr, "clnorm cache: unknown option \"%s\"\n\n%s", argv[i], cache_usage);
            return TOOL_USAGE;
        }
    }
    char dir[4096];
    if (cln_disk_dir(dir, sizeof dir, 0) == CLN_DISK_OFF) {
        printf("the disk cache is disabled (CLNORM_CACHE_DIR=off, or no HOME)\n");
        return TOOL_OK;
    }
    DIR *d = opendir(dir);
    if (!d) {
        printf("folder  %s (not created yet: empty)\n", dir);
        return TOOL_OK;
    }

    /* For --verify: what this process would build (profiles by query, no probes). */
    cln_profile devs[32];
    size_t ndev = 0, src_len = 0;
    uint64_t src_hash = 0;
    if (verify) {
        cln_device_ref refs[32];
        size_t total = 0;
        if (cln_device_list(refs, 32, &total) == CLNORM_SUCCESS)
            for (size_t i = 0; i < total && i < 32; i++)
                if (cln_profile_query(refs[i].device, &devs[ndev]) == CLNORM_SUCCESS) ndev++;
        char *src;
        if (cln_source_get(&src, &src_len) == CLNORM_SUCCESS) {
            src_hash = cln_hash64(src, src_len, 0);
            free(src);
        }
    }

    printf("folder  %s\n\n", dir);
    if (!clear)
        printf("%-7s %-32s %-12s %9s %9s  %s%-22s\n", "kind", "device", "driver", "KiB", "age",
               verify ? "check                  " : "", "build options");
    size_t files = 0, removed = 0, damaged = 0, stale = 0, bytes = 0;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *nm = e->d_name;
        size_t len = strlen(nm);
        int tmp = !strncmp(nm, ".tmp-", 5);
        int probe = !strncmp(nm, "probe-", 6);
        int ours = tmp || ((!strncmp(nm, "prog-", 5) || !strncmp(nm, "tune-", 5) || probe) &&
                           len > 4 && !strcmp(nm + len - 4, ".bin"));
        if (!ours) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        struct stat sb;
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        files++;
        bytes += (size_t)sb.st_size;
        if (clear) {
            if (unlink(path) == 0) removed++;
            else fprintf(stderr, "clnorm cache: cannot delete %s\n", path);
            continue;
        }
        char age[32], dev[512] = "", drv[512] = "", opt[512] = "", *key = NULL;
        age_text(difftime(now, sb.st_mtime), age, sizeof age);
        size_t plen;
        int r = tmp ? CLN_DISK_BAD : cln_disk_inspect(path, &key, &plen);
        const char *kind = tmp ? "temp" : probe ? "probe" : nm[0] == 'p' ? "program" : "tuning",
                   *check = "";
        if (key) {
            key_field(key, "device", dev, sizeof dev);
            key_field(key, "driver", drv, sizeof drv);
            key_field(key, "options", opt, sizeof opt);
        } else if (!tmp) {
            snprintf(dev, sizeof dev, "? (%s)", nm);
        }
        if (verify) {
            if (tmp) check = "left by a killed process";
            else if (r) check = "DAMAGED", damaged++;
            else if (*(check = stale_reason(key, devs, ndev, src_hash, src_len))) stale++;
            else check = "ok";
        }
        printf("%-7s %-32.32s %-12.12s %9.1f %9s  %-*s%s\n", kind, dev, drv,
               (double)sb.st_size / 1024.0, age, verify ? 23 : 0, check,
               nm[0] == 'p' && !probe && key ? opt : "-");
        free(key);
    }
    closedir(d);
    if (clear)
        printf("deleted %zu of %zu files (%.1f KiB)\n", removed, files, (double)bytes / 1024.0);
    else
        printf("\n%zu files, %.1f KiB%s", files, (double)bytes / 1024.0, verify ? "" : "\n");
    if (verify && !clear)
        printf("; %zu damaged, %zu stale (rebuilt and replaced when next used)\n", damaged, stale);
    return damaged || (clear && removed < files) ? TOOL_FAIL : TOOL_OK;
}
