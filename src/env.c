/* The environment, read once per operation. Every call consults a dozen variables
   (CLNORM_* settings, the cache folder's XDG_CACHE_HOME and HOME), and each getenv
   scans the whole environment (docs/DESIGN.md, 'Host cost per call'). An operation
   takes one pass over environ at its start (cln_env_begin) and looks names up among
   the few it kept; outside an operation, or where more variables match than it
   keeps, cln_getenv is getenv. Variables still change between calls, as the tests
   and the tools rely on. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

enum { CLN_ENV_MAX = 32 };

static _Thread_local struct {
    int depth;  /* nesting of begin/end; the snapshot holds while > 0 */
    int valid;  /* 0: more than CLN_ENV_MAX matches, fall back to getenv */
    int n;
    const char *e[CLN_ENV_MAX];
} cln_env;

static int cln_env_wanted(const char *kv)
{
    switch (kv[0]) {
    case 'C': return !strncmp(kv, "CLNORM_", 7);
    case 'X': return !strncmp(kv, "XDG_CACHE_HOME=", 15);
    case 'H': return !strncmp(kv, "HOME=", 5);
    default: return 0;
    }
}

void cln_env_begin(void)
{
    if (cln_env.depth++ > 0) return;
    cln_env.n = 0;
    cln_env.valid = 1;
    for (char **p = environ; p && *p; p++) {
        if (!cln_env_wanted(*p)) continue;
        if (cln_env.n == CLN_ENV_MAX) {
            cln_env.valid = 0;
            break;
        }
        cln_env.e[cln_env.n++] = *p;
    }
}

void cln_env_end(void)
{
    if (cln_env.depth > 0) cln_env.depth--;
}

const char *cln_getenv(const char *name)
{
    if (cln_env.depth == 0 || !cln_env.valid) return getenv(name);
    size_t len = strlen(name);
    for (int i = 0; i < cln_env.n; i++)
        if (!strncmp(cln_env.e[i], name, len) && cln_env.e[i][len] == '=')
            return cln_env.e[i] + len + 1;
    return NULL;
}

/* Left unpinned, PoCL's worker threads may share one core and halve a shape's
   throughput (docs/DESIGN.md, 'PoCL worker threads'). The library never sets
   POCL_AFFINITY: the environment is the application's, and an application may pin
   its own threads. The tools do, through this. */
int cln_pocl_pin_wanted(const char *pocl_affinity, size_t cpus, size_t allowed_prefix)
{
    if (pocl_affinity && *pocl_affinity) return 0;
    return cpus >= 2 && allowed_prefix >= cpus;
}
