/* The profile of each device: what its queries say, and what small probe kernels
   show it can really run (sub-groups, NVIDIA warp shuffles: probe.c). Probed once per
   device and process; the probes' answers are kept in the disk cache, and so is a
   fast path dropped later because its program did not build. */
#include "profile.h"
#include "config.h"
#include "disk_cache.h"
#include "emulate.h"
#include "faults.h"
#include "probe.h"
#include "status.h"
#include "types.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#endif

static int cln_has_ext(const char *exts, const char *name)
{
    size_t len = strlen(name);
    for (const char *s = exts; (s = strstr(s, name)) != NULL; s += len)
        if ((s == exts || s[-1] == ' ') && (s[len] == ' ' || s[len] == '\0')) return 1;
    return 0;
}

clnorm_status cln_profile_query(cl_device_id dev, cln_profile *p)
{
    clnorm_status st = CLNORM_SUCCESS;
    cl_platform_id plat;
    memset(p, 0, sizeof *p);
    p->subgroup_std = "";
    CLN_CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL),
                 "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
    clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof p->platform_name - 1, p->platform_name, NULL);
    clGetPlatformInfo(plat, CL_PLATFORM_VENDOR, sizeof p->platform_vendor - 1, p->platform_vendor,
                      NULL);
    clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof p->platform_version - 1,
                      p->platform_version, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof p->device_name - 1, p->device_name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_VENDOR, sizeof p->device_vendor - 1, p->device_vendor, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof p->driver_version - 1, p->driver_version, NULL);
    CLN_CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof p->type, &p->type, NULL),
                 "clGetDeviceInfo(CL_DEVICE_TYPE)");
    CLN_CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof p->compute_units,
                                 &p->compute_units, NULL),
                 "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
    CLN_CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof p->max_wg,
                                 &p->max_wg, NULL),
                 "clGetDeviceInfo(CL_DEVICE_MAX_WORK_GROUP_SIZE)");
    size_t dims[3] = {0, 0, 0};
    if (clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL) ==
            CL_SUCCESS && dims[0] && dims[0] < p->max_wg)
        p->max_wg = dims[0];
    CLN_CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof p->local_mem,
                                 &p->local_mem, NULL),
                 "clGetDeviceInfo(CL_DEVICE_LOCAL_MEM_SIZE)");
    p->pref_multiple = (p->type & CL_DEVICE_TYPE_GPU) ? 32 : 8;
    /* CPUs need explicit vectors to use their SIMD lanes: their preferred width. GPUs
       coalesce scalar accesses across work-items, yet a 16-byte access per work-item
       keeps four times the bytes in flight (every GPU has such loads): 4 floats here,
       8 elements in 16-bit builds (cln_build_vec). */
    p->vec = (p->type & CL_DEVICE_TYPE_CPU) ? 1 : 4;
    cl_uint pw = 0;
    if ((p->type & CL_DEVICE_TYPE_CPU) &&
        clGetDeviceInfo(dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof pw, &pw, NULL) ==
            CL_SUCCESS)
        while (p->vec * 2 <= pw && p->vec < 16) p->vec *= 2;
    /* A CPU that prefers scalars runs work-items as the lanes of its SIMD loops (Mesa
       llvmpipe), where each trip of a loop costs more than the element it loads: its
       kernels take a GPU's vectors of 4, dealt round-robin over the lanes: float32
       softmax and RMSNorm ran 2.2 to 3.2 times faster there than at an element a trip
       (docs/DESIGN.md, 'CPUs whose work-items are SIMD lanes'). */
    if ((p->type & CL_DEVICE_TYPE_CPU) && p->vec == 1) {
        p->simd_lanes = 1;
        p->vec = 4;
    }
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS)
        p->no_denormals = (fp & CL_FP_DENORM) == 0;
    size_t elen = 0;
    char *exts = NULL;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &elen) == CL_SUCCESS &&
        (exts = calloc(1, elen + 1)) != NULL)
        clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, elen, exts, NULL);
    if (exts && cln_has_ext(exts, "cl_nv_device_attribute_query")) {
        p->nv = 1;
        clGetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof(cl_uint),
                        &p->nv_cc_major, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof(cl_uint),
                        &p->nv_cc_minor, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_WARP_SIZE_NV, sizeof(cl_uint), &p->warp, NULL);
    }
    if (exts && cln_has_ext(exts, "cl_nv_compiler_options")) p->nv_compiler_options = 1;
    /* The coop variant's groups wait for one another (cl/coop.cl). */
    p->coop = p->nv || (cln_faults() & CLN_FAULT_COOP) != 0;
    /* NVIDIA's driver 580 reports CL_KERNEL_WORK_GROUP_SIZE 256 for every kernel, a
       one-line one too, yet runs groups of 512 and 1024 correctly. Every build caps
       registers at 64 (-cl-nv-maxrregcount), so a group of 1024 always has its
       registers: take the device's limit there (docs/DESIGN.md, 'Driver quirks'). */
    if (p->nv && p->nv_compiler_options) p->kernel_wg_understated = 1;
    /* Mesa's llvmpipe ends a shader after 65535 loop trips, counted over all the
       loops a work-item runs: keep each of a kernel's at most four row loops below a
       quarter of that. It also drops the partial last SIMD group's lanes after
       barriers inside a branch (RMSNorm's rescaling, cl/rmsnorm.cl). See
       docs/DESIGN.md, 'Driver quirks'. */
    if (strstr(p->device_name, "llvmpipe")) {
        p->loop_limit = 16000;
        p->flat_barriers = 1;
    }
    /* Rusticl 22.3 reports CL_KERNEL_WORK_GROUP_SIZE 32 for every kernel, yet runs
       work-groups up to the device's 1024 correctly: take the device's limit there
       (docs/DESIGN.md, 'Driver quirks'). */
    if (!strcmp(p->platform_name, "rusticl")) p->kernel_wg_understated = 1;
    const char *pv = strstr(p->platform_version, "PoCL ");
    if (pv) p->pocl_major = atoi(pv + 5);
    /* Remember the candidates; the probes decide. */
    if (exts && (cln_has_ext(exts, "cl_khr_subgroups") || cln_has_ext(exts, "cl_intel_subgroups")))
        p->has_subgroups = 1;
    free(exts);
    return CLNORM_SUCCESS;
fail:
    return st;
}

/* The reduction path the probes' answers allow, fastest first. */
static void cln_set_best_path(cln_profile *p)
{
    p->best_path = p->has_nv_shuffle ? CLN_PATH_NV
                   : p->has_subgroups ? CLN_PATH_SUBGROUP : CLN_PATH_LOCAL;
}

/* The probes' answers, kept in the disk cache beside the programs, keyed like them
   (library, platform, device and driver): each probe build starts the driver's
   compiler, which would otherwise dominate a start whose programs all come from the
   disk (docs/DESIGN.md, 'Disk cache'). */
static const char *const cln_std_opts[] = {"", "-cl-std=CL3.0", "-cl-std=CL2.0"};

/* The probe file's name and key for p's device. Faults injected for testing make
   records of their own, which no ordinary process reads. */
static void cln_probe_slot(const cln_profile *p, char name[96], char key[2048])
{
    char faults[32] = "";
    if (cln_faults()) snprintf(faults, sizeof faults, "faults %u", cln_faults());
    cln_disk_name(p, "probe", faults, name, 96);
    cln_disk_key(p, "probe", faults, 0, 0, key, 2048);
}

/* The record: "probes 2" (probes that run and check; earlier records, which only
   compiled, are probed again), then the answers, and the fast path dropped after its
   program failed to build (a cln_path, 0 for none). */
#define CLN_PROBE_RECORD "probes 2 pref %u subgroups %d std %d nv %d dropped %d"

/* Profiles live for the life of the process: device ids are few and stable. A
   device's newest entry comes first; a dropped fast path adds a newer one, so that
   a profile once handed out never changes. */
typedef struct cln_profile_entry {
    cl_device_id dev;
    cln_profile prof;
    int dropped; /* the fast path dropped since the probes, or 0 */
    struct cln_profile_entry *next;
} cln_profile_entry;
static cln_profile_entry *cln_profiles;
static pthread_mutex_t cln_profiles_lock = PTHREAD_MUTEX_INITIALIZER;

static int cln_probe_load(cln_profile_entry *e)
{
    cln_profile *p = &e->prof;
    char dir[4096], name[96], key[2048], path[4200];
    if (cln_disk_dir(dir, sizeof dir, 0) != CLN_DISK_OK) return 0;
    cln_probe_slot(p, name, key);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char *data = NULL;
    size_t len = 0;
    if (cln_disk_read(path, key, &data, &len) != CLN_DISK_OK) return 0;
    char text[128] = "";
    if (len < sizeof text) memcpy(text, data, len);
    free(data);
    unsigned pref = 0;
    int sg = -1, std = -1, nv = -1, dropped = -1;
    if (sscanf(text, CLN_PROBE_RECORD, &pref, &sg, &std, &nv, &dropped) != 5 || sg < 0 ||
        sg > 1 || std < 0 || std > 2 || nv < 0 || nv > 1 || (nv && !p->nv) || dropped < 0 ||
        dropped >= CLN_PATH_COUNT)
        return 0;
    if (pref) p->pref_multiple = pref;
    p->has_subgroups = sg;
    p->subgroup_std = cln_std_opts[std];
    p->has_nv_shuffle = nv;
    e->dropped = dropped;
    return 1;
}

static void cln_probe_store(const cln_profile_entry *e)
{
    const cln_profile *p = &e->prof;
    char dir[4096], name[96], key[2048], text[128];
    if (cln_disk_dir(dir, sizeof dir, 1) != CLN_DISK_OK) return;
    int std = 0;
    for (int i = 0; i < 3; i++)
        if (p->subgroup_std && !strcmp(p->subgroup_std, cln_std_opts[i])) std = i;
    int n = snprintf(text, sizeof text, CLN_PROBE_RECORD, (unsigned)p->pref_multiple,
                     p->has_subgroups ? 1 : 0, std, p->has_nv_shuffle ? 1 : 0, e->dropped);
    cln_probe_slot(p, name, key);
    cln_disk_write(dir, name, key, text, (size_t)n);
}

/* The profile of dev: its newest entry, else a new one (fresh: always a new one). */
static clnorm_status cln_profile_find(cl_device_id dev, int fresh, const cln_profile **out)
{
    clnorm_status st = CLNORM_SUCCESS;
    pthread_mutex_lock(&cln_profiles_lock);
    for (cln_profile_entry *e = cln_profiles; e && !fresh; e = e->next)
        if (e->dev == dev) { *out = &e->prof; goto done; }
    cln_profile_entry *e = calloc(1, sizeof *e);
    if (!e) {
        st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a device profile");
        goto done;
    }
    st = cln_profile_query(dev, &e->prof);
    if (st) { free(e); goto done; }
    /* Probing under the lock keeps two threads from running the same probes. */
    if (!cln_probe_load(e)) {
        cln_probe_device(dev, &e->prof);
        cln_probe_store(e);
    }
    cln_set_best_path(&e->prof);
    /* Testing: a smaller device's limits (CLNORM_EMULATE), after the probe file. */
    if ((st = cln_emulate_profile(&e->prof))) { free(e); goto done; }
    e->dev = dev;
    e->next = cln_profiles;
    cln_profiles = e;
    *out = &e->prof;
done:
    pthread_mutex_unlock(&cln_profiles_lock);
    return st;
}

clnorm_status cln_profile_get(cl_device_id dev, const cln_profile **out)
{
    return cln_profile_find(dev, 0, out);
}

clnorm_status cln_profile_refresh(cl_device_id dev)
{
    const cln_profile *p;
    return cln_profile_find(dev, 1, &p);
}

const cln_profile *cln_profile_drop_path(cl_device_id dev, cln_path path)
{
    pthread_mutex_lock(&cln_profiles_lock);
    cln_profile_entry *cur = cln_profiles;
    while (cur && cur->dev != dev) cur = cur->next;
    cln_profile_entry *e = NULL;
    /* Another thread may have dropped it already; then its profile serves. */
    if (!cur || cur->prof.best_path != path || path == CLN_PATH_LOCAL) {
        pthread_mutex_unlock(&cln_profiles_lock);
        return cur ? &cur->prof : NULL;
    }
    if (!(e = malloc(sizeof *e))) {
        pthread_mutex_unlock(&cln_profiles_lock);
        return NULL;
    }
    *e = *cur;
    if (path == CLN_PATH_NV) e->prof.has_nv_shuffle = 0;
    else e->prof.has_subgroups = 0;
    cln_set_best_path(&e->prof);
    e->dropped = (int)path;
    e->next = cln_profiles;
    cln_profiles = e;
    cln_probe_store(e);
    if (cln_config_now()->pub.trace || cln_config_now()->pub.build_log)
        fprintf(stderr, "clnorm: the %s path's program did not build on \"%s\"; calls take the "
                "%s path from now on. %s\n", cln_path_name(path), e->prof.device_name,
                cln_path_name(e->prof.best_path), clnorm_last_error());
    pthread_mutex_unlock(&cln_profiles_lock);
    return &e->prof;
}

int cln_profile_dropped(const cln_profile *p)
{
    const cln_profile_entry *e =
        (const cln_profile_entry *)(const void *)((const char *)p -
                                                  offsetof(cln_profile_entry, prof));
    pthread_mutex_lock(&cln_profiles_lock);
    int d = e->dropped;
    pthread_mutex_unlock(&cln_profiles_lock);
    return d;
}
