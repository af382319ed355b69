/* The kernel source: embedded, or from the configuration's kernel folder (source.c). */
#ifndef CLNORM_SOURCE_H
#define CLNORM_SOURCE_H

#include "types.h"

/* The whole program source, malloc'd. */
CLN_HIDDEN clnorm_status cln_source_get(char **src, size_t *len);
/* The source a program is built from, and its hash: the embedded source (assembled
   once; *owned 0) or the kernel folder's, read again at every build (*owned 1: the
   caller frees it). Either way the caller hands it back with cln_source_done. */
CLN_HIDDEN clnorm_status cln_source_for_build(char **src, size_t *len, uint64_t *hash,
                                              int *owned);
/* Ends the use of a source cln_source_for_build gave. */
CLN_HIDDEN void cln_source_done(char *src, int owned);
/* Frees the embedded source's copy (clnorm_release_cache(NULL)), or has the last
   build still using it free it. */
CLN_HIDDEN void cln_source_forget(void);

#endif
