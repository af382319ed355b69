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

static void age_text(double s, char *buf, size_t len)
{
    if (s < 120) snprintf(buf, len, "%.0f s", s);
    else if (s < 7200) snprintf(buf, len, "%.0f min", s / 60);
    else if (s < 172800) snprintf(buf, len, "%.1f h", s / 3600);
    else snprintf(buf, len, "%.1f d", s / 86400);
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
    if (clnorm_cache_dir(dir, sizeof dir) == CLNORM_CACHE_FILE_OFF) {
        printf("the disk cache is disabled (CLNORM_CACHE_DIR=off, or no HOME)\n");
        return TOOL_OK;
    }
    DIR *d = opendir(dir);
    if (!d) {
        printf("folder  %s (not created yet: empty)\n", dir);
        return TOOL_OK;
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
        char age[32], dev[512] = "";
        age_text(difftime(now, sb.st_mtime), age, sizeof age);
        /* The library reads the file: header, checksum and key; with --verify also
           against this library, its kernel source and the devices present. */
        clnorm_cache_file cf;
        memset(&cf, 0, sizeof cf);
        clnorm_cache_file_status r =
            tmp ? CLNORM_CACHE_FILE_DAMAGED : clnorm_cache_inspect(nm, verify, &cf);
        int whole = r == CLNORM_CACHE_FILE_OK || r == CLNORM_CACHE_FILE_STALE;
        const char *kind = tmp ? "temp" : probe ? "probe" : nm[0] == 'p' ? "program" : "tuning",
                   *check = "";
        if (whole) snprintf(dev, sizeof dev, "%s", cf.device);
        else if (!tmp) snprintf(dev, sizeof dev, "? (%s)", nm);
        if (verify) {
            if (tmp) check = "left by a killed process";
            else if (!whole) check = "DAMAGED", damaged++;
            else if (r == CLNORM_CACHE_FILE_STALE) check = cf.stale_reason, stale++;
            else check = "ok";
        }
        printf("%-7s %-32.32s %-12.12s %9.1f %9s  %-*s%s\n", kind, dev, whole ? cf.driver : "",
               (double)sb.st_size / 1024.0, age, verify ? 23 : 0, check,
               nm[0] == 'p' && !probe && whole ? cf.options : "-");
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
