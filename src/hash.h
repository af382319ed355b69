/* The hash of sources, options and disk cache files (hash.c). */
#ifndef CLNORM_HASH_H
#define CLNORM_HASH_H

#include "types.h"

/* FNV-1a over len bytes of data, starting from seed (0, or an earlier hash). */
CLN_HIDDEN uint64_t cln_hash64(const void *data, size_t len, uint64_t seed);

#endif
