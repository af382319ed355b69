/* The on-disk cache: program binaries, probe answers and tuning tables, one file per
   key (disk_cache.c). Folder: the process configuration's cache_dir
   (CLNORM_CACHE_DIR; "off" disables it), else $XDG_CACHE_HOME/clnorm, else
   ~/.cache/clnorm, worked out when the configuration is set (config.c). Nothing here
   fails a call or records an error: a missing, damaged, foreign or stale file is "not
   cached", an unusable folder means memory only. */
#ifndef CLNORM_DISK_CACHE_H
#define CLNORM_DISK_CACHE_H

#include "types.h"

#define CLN_DISK_FORMAT 1
enum { CLN_DISK_OK = 0, CLN_DISK_ABSENT = 1, CLN_DISK_BAD = 2, CLN_DISK_OFF = 3 };
/* The folder into buf; with create, makes it (0700) and checks it is writable.
   CLN_DISK_OFF when disabled or no home, CLN_DISK_BAD when unusable. */
CLN_HIDDEN int cln_disk_dir(char *buf, size_t len, int create);
/* Full key text of a file: kind ("program", "tuning"), format, library version,
   platform name and version, device name and vendor, driver version, options and
   the source's hash and length. */
CLN_HIDDEN void cln_disk_key(const cln_profile *p, const char *kind, const char *options,
                             uint64_t src_hash, size_t src_len, char *buf, size_t len);
/* File name of a slot: "prog-<hash>.bin" / "tune-<hash>.bin", hashed from kind,
   library version, platform name, device name and options. */
CLN_HIDDEN void cln_disk_name(const cln_profile *p, const char *kind, const char *options,
                              char *buf, size_t len);
/* Reads path and returns its payload (malloc'd) if the file is whole and holds
   exactly key. CLN_DISK_ABSENT when there is no file, CLN_DISK_BAD otherwise. */
CLN_HIDDEN int cln_disk_read(const char *path, const char *key, unsigned char **data,
                             size_t *len);
/* Checks a file's header and checksum whatever its key; returns the key (malloc'd,
   NUL-terminated, may be NULL to skip) and payload length. For tools. */
CLN_HIDDEN int cln_disk_inspect(const char *path, char **key, size_t *data_len);
/* Writes dir/name atomically (temporary file, then rename). */
CLN_HIDDEN int cln_disk_write(const char *dir, const char *name, const char *key,
                              const void *data, size_t len);
/* The program binary of (device, options, source), and its store. */
CLN_HIDDEN int cln_disk_load(const cln_profile *p, const char *options, uint64_t src_hash,
                             size_t src_len, unsigned char **bin, size_t *len);
CLN_HIDDEN int cln_disk_store(const cln_profile *p, const char *options, uint64_t src_hash,
                              size_t src_len, const unsigned char *bin, size_t len);
/* 0 where reading a program's binary right after its build costs more than the
   build it saves: PoCL compiles every kernel for dynamic work-group sizes when asked
   for binaries (docs/DESIGN.md, 'Program grouping'). There clnorm builds programs of
   one kernel and stores each after its first run instead (program_build.c,
   cln_stores_programs). */
CLN_HIDDEN int cln_disk_wants_binaries(const cln_profile *p);
/* Whether program files are read at all for p's device (not on Rusticl). */
CLN_HIDDEN int cln_disk_reads_binaries(const cln_profile *p);
/* Process-wide counters, for tests and tools. */
typedef struct cln_disk_stats {
    unsigned long hits, misses, rejected; /* loads: valid, no file, damaged/stale file */
    unsigned long refused;                /* valid files the driver would not build */
    unsigned long stores, store_failures;
} cln_disk_stats;
CLN_HIDDEN void cln_disk_stats_get(cln_disk_stats *s);
CLN_HIDDEN void cln_disk_count_refused(void);

#endif
