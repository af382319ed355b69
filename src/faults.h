/* Faults injected for testing only (faults.c): CLNORM_TEST_FAULTS, a comma-separated
   list read once at the first use, or cln_faults_set from a test. They let the tests
   reach the fallbacks of devices whose fast paths fail on devices whose do not. */
#ifndef CLNORM_FAULTS_H
#define CLNORM_FAULTS_H

#include "types.h"

enum {
    /* "subgroups": treat the device as listing cl_khr_subgroups (the probes decide). */
    CLN_FAULT_SUBGROUPS = 1,
    /* "trust-probes": skip the probes' runs and trust every candidate fast path, as
       on a driver whose probes pass but whose programs do not build. */
    CLN_FAULT_TRUST_PROBES = 2,
    /* "break-fast-path": the programs of the fast paths are compiled with
       -DCLN_BREAK_FAST_PATH, a compile error there (cl/reduce.cl). */
    CLN_FAULT_BREAK_FAST_PATH = 4,
    /* "probe-wrong": the probes' checks see a wrong answer. */
    CLN_FAULT_PROBE_WRONG = 8,
    /* "coop": treat the device's groups as running side by side, so that the coop
       variant runs there; safe only where each row has one slice (the Oclgrind
       sweep) or the device does run its groups so. */
    CLN_FAULT_COOP = 16,
    /* "sync-small": the coop variant's synchronisation words run out after
       CLN_SYNC_WORDS_SMALL (src/scratch.h), so that a few calls reach their refill. */
    CLN_FAULT_SYNC_SMALL = 32
};

/* The faults in force: CLN_FAULT_* bits. */
CLN_HIDDEN unsigned cln_faults(void);
/* Replaces them with those a CLNORM_TEST_FAULTS value names (NULL or "": none).
   Returns -1, changing nothing, for a name it does not know. */
CLN_HIDDEN int cln_faults_set(const char *list);

#endif
