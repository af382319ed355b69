/* Faults injected for testing only: CLNORM_TEST_FAULTS (faults.h). A value it cannot
   parse injects nothing; no application sets it. */
#include "faults.h"
#include "types.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint cln_fault_bits;
static pthread_once_t cln_fault_once = PTHREAD_ONCE_INIT;

/* The bits of list into *out; -1 for an unknown name. */
static int cln_faults_parse(const char *list, unsigned *out)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"subgroups", CLN_FAULT_SUBGROUPS}, {"trust-probes", CLN_FAULT_TRUST_PROBES},
        {"break-fast-path", CLN_FAULT_BREAK_FAST_PATH}, {"probe-wrong", CLN_FAULT_PROBE_WRONG},
        {"coop", CLN_FAULT_COOP}, {"sync-small", CLN_FAULT_SYNC_SMALL}};
    unsigned bits = 0;
    for (const char *s = list; s && *s;) {
        size_t n = strcspn(s, ",");
        size_t i = 0;
        while (i < sizeof names / sizeof names[0] &&
               (strlen(names[i].name) != n || strncmp(s, names[i].name, n)))
            i++;
        if (n && i == sizeof names / sizeof names[0]) return -1;
        if (n) bits |= names[i].bit;
        s += n + (s[n] == ',');
    }
    *out = bits;
    return 0;
}

static void cln_faults_read(void)
{
    unsigned bits = 0;
    if (cln_faults_parse(getenv("CLNORM_TEST_FAULTS"), &bits) == 0)
        atomic_store(&cln_fault_bits, bits);
}

unsigned cln_faults(void)
{
    pthread_once(&cln_fault_once, cln_faults_read);
    return atomic_load(&cln_fault_bits);
}

int cln_faults_set(const char *list)
{
    unsigned bits = 0;
    pthread_once(&cln_fault_once, cln_faults_read);
    if (cln_faults_parse(list, &bits) != 0) return -1;
    atomic_store(&cln_fault_bits, bits);
    return 0;
}
