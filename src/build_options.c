/* What a program is built with: the compile options for a device, element type and
   reduction path, and which kernels the program holds (all of them, or one alone:
   docs/DESIGN.md, 'Program grouping'). The options are part of the program's key in
   both caches. */
#include "build_options.h"
#include "config.h"
#include "disk_cache.h"
#include "faults.h"
#include "kernels.h"
#include "plan.h"
#include "types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CLN_BLOCKED of a program: each work-item streams a block of its own on CPUs that
   vectorise work-items; GPUs and CPUs whose work-items are SIMD lanes deal chunks
   round-robin, so that neighbouring work-items touch neighbouring memory. */
int cln_build_blocked(const cln_profile *p)
{
    return (p->type & CL_DEVICE_TYPE_CPU) && !p->simd_lanes;
}

/* CLN_VEC of a program: the profile's width, in bytes alike for 16-bit GPU builds. */
unsigned cln_build_vec(const cln_profile *p, clnorm_dtype dtype)
{
    unsigned v = p->vec ? p->vec : 1;
    /* GPU loads are sized in bytes (16): twice the elements in 16-bit storage. CPUs
       whose work-items are SIMD lanes (llvmpipe) double it for bfloat16 alone: its
       softmax ran 10-16 % faster at 8, while float16, converted in software there, ran
       RMSNorm 4 % slower. */
    const int twice = !(p->type & CL_DEVICE_TYPE_CPU) ? dtype != CLNORM_F32
                                                      : p->simd_lanes && dtype == CLNORM_BF16;
    if (twice && v > 1 && v < 16) v *= 2;
    return v;
}

/* The float32 coop kernel's loads skip L1 (ld.global.L1::no_allocate, cl/coop.cl) from
   compute capability 8, where the driver's PTX is 7.4 or later: NVIDIA's driver 470 and
   up. 16-bit rows gained nothing from it. Only the NVIDIA path's programs take it, so
   that a driver refusing it loses that path, and the local path still builds. */
static int cln_nv_noalloc(const cln_profile *p, clnorm_dtype dtype, cln_path path)
{
    return path == CLN_PATH_NV && p->nv_cc_major >= 8 && atoi(p->driver_version) >= 470 &&
           dtype == CLNORM_F32;
}

void cln_build_options(const cln_profile *p, clnorm_dtype dtype, cln_path path, char *buf,
                       size_t len)
{
    /* Never -cl-fast-relaxed-math or -cl-finite-math-only: they void the special-value
       contract. */
    /* Every call asks (once per kernel): the last answer is kept per thread. Profiles
       are never freed, so their address identifies them. */
    static _Thread_local struct {
        const cln_profile *p;
        int dtype, path, ok;
        unsigned faults;
        size_t word;
        char extra[256], out[512];
    } memo;
    const cln_settings *set = cln_settings_now();
    const char *extra = set->cfg->pub.build_options;
    const size_t word = cln_word_size(p, set->lim.word);
    const unsigned faults = cln_faults();
    if (memo.ok && memo.p == p && memo.dtype == (int)dtype && memo.path == (int)path &&
        memo.word == word && memo.faults == faults &&
        !strcmp(memo.extra, extra) && strlen(memo.out) < len) {
        memcpy(buf, memo.out, strlen(memo.out) + 1);
        return;
    }
    /* NVIDIA sizes registers for 256 work-items unless told; with 64 every kernel has
       its registers in a group of 1024, which long rows want (profile.c; see
       docs/DESIGN.md, 'Register slots per work-item'). */
    /* NVIDIA from compute capability 8 converts to bfloat16 in one instruction
       (cl/dtype.cl); only bf16 programs use it. From compute capability 7 the coop
       kernel's pairs pass through relaxed accesses at the device's scope, inline PTX
       (cl/coop.cl). */
    snprintf(buf, len,
             "-DCLN_DTYPE=%d -DCLN_PATH=%d -DCLN_VEC=%u -DCLN_BLOCKED=%d -DCLN_WORD=%zu"
             " -DCLN_COOP_ELEMS=%d -DCLN_COOP_BATCHES=%d%s%s%s%s%s%s%s%s%s%s",
             (int)dtype, (int)path, cln_build_vec(p, dtype), cln_build_blocked(p),
             word, CLN_COOP_ELEMS, CLN_COOP_BATCHES, p->flat_barriers ? " -DCLN_FLAT_BARRIERS" : "",
             p->simd_lanes ? " -DCLN_SIMD_LANES=1" : "",
             p->no_denormals && dtype == CLNORM_BF16 ? " -DCLN_BF16_TINY=1" : "",
             p->nv && p->nv_cc_major >= 7 ? " -DCLN_NV_RELAXED" : "",
             path == CLN_PATH_NV && p->nv_cc_major >= 7 ? " -DCLN_NV_SYNC" : "",
             p->nv && p->nv_cc_major >= 8 && dtype == CLNORM_BF16 ? " -DCLN_NV_CVT" : "",
             cln_nv_noalloc(p, dtype, path) ? " -DCLN_NV_NOALLOC" : "",
             p->nv_compiler_options ? " -cl-nv-maxrregcount=64" : "",
             path == CLN_PATH_SUBGROUP && *p->subgroup_std ? " " : "",
             path == CLN_PATH_SUBGROUP ? p->subgroup_std : "");
    /* Extra options for experiments; they are part of the key like the rest. */
    size_t used = strlen(buf);
    if (*extra && used + 1 < len) snprintf(buf + used, len - used, " %s", extra);
    /* For testing only: a fast path whose program does not build (faults.h). */
    used = strlen(buf);
    if ((faults & CLN_FAULT_BREAK_FAST_PATH) && path != CLN_PATH_LOCAL && used + 1 < len)
        snprintf(buf + used, len - used, " -DCLN_BREAK_FAST_PATH");
    memo.ok = strlen(extra) < sizeof memo.extra && strlen(buf) < sizeof memo.out;
    if (memo.ok) {
        memo.p = p;
        memo.dtype = (int)dtype;
        memo.path = (int)path;
        memo.word = word;
        memo.faults = faults;
        strcpy(memo.extra, extra);
        strcpy(memo.out, buf);
    }
}

void cln_only_option(cln_kernel_id kid, char *options, size_t len)
{
    size_t used = strlen(options);
    if (used < len)
        snprintf(options + used, len - used, " -DCLN_ONLY=1 -DCLN_ONLY_%s=1", cln_kernel_name(kid));
}

/* One program per kernel where the disk cache is on and keeps binaries (every driver
   but Rusticl), so that a process compiles and loads only the kernels it runs.
   PoCL: asking for a binary compiles every kernel of the program for dynamic
   work-group sizes, and a binary taken after a kernel's first run carries its
   compiled work-group function, so that a later start that loads it never starts
   PoCL's compiler. NVIDIA: its binaries are PTX, compiled to machine code at every
   load, so fewer kernels load faster. See docs/DESIGN.md, 'Program grouping'. */
int cln_programs_one(const cln_profile *p)
{
    const int forced = cln_settings_now()->programs;
    if (forced > 0) return forced == 1;
    return cln_disk_reads_binaries(p) && cln_config_now()->disk == CLN_DISK_OK;
}

void cln_program_options(const cln_profile *p, clnorm_dtype dtype, cln_path path,
                         cln_kernel_id kid, char *buf, size_t len)
{
    cln_build_options(p, dtype, path, buf, len);
    if (cln_programs_one(p)) cln_only_option(kid, buf, len);
}

int cln_stores_programs(const cln_profile *p)
{
    return cln_disk_wants_binaries(p) || cln_programs_one(p);
}
