/* The one hash of clnorm: FNV-1a, 64 bits. It tells kernel sources and build options
   apart, names the disk cache's files and checks their contents; it is not a
   security measure. */
#include "hash.h"

uint64_t cln_hash64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}
