/* The configuration seen from outside: the process configuration read and replaced,
   and the plan hints of threads and queues, each checked here before the
   configuration (config.c) takes it. */
#include "clnorm_advanced.h"
#include "config.h"
#include "hints.h"
#include "status.h"
#include "validate.h"

#include <string.h>

void clnorm_config_get(clnorm_config *c)
{
    if (c) *c = cln_config_take()->pub;
}

static clnorm_status cln_string_fits(const char *field, size_t size, const char *name)
{
    if (memchr(field, '\0', size)) return CLNORM_SUCCESS;
    return cln_fail(CLNORM_INVALID_ARGUMENT, "config.%s has no terminating NUL within its %zu "
                    "bytes", name, size);
}

clnorm_status clnorm_config_set(const clnorm_config *c)
{
    if (!c) return cln_fail(CLNORM_INVALID_ARGUMENT, "config is NULL");
    clnorm_status st;
    if ((st = cln_hints_check_named(&c->hints, "config.hints")) ||
        (st = cln_string_fits(c->cache_dir, sizeof c->cache_dir, "cache_dir")) ||
        (st = cln_string_fits(c->kernel_dir, sizeof c->kernel_dir, "kernel_dir")) ||
        (st = cln_string_fits(c->build_options, sizeof c->build_options, "build_options")))
        return st;
    if (c->build_log != 0 && c->build_log != 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.build_log = %d is not 0 or 1",
                        c->build_log);
    if (c->trace != 0 && c->trace != 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.trace = %d is not 0 or 1", c->trace);
    if (c->serial < -1 || c->serial > 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.serial = %d is not -1, 0 or 1",
                        c->serial);
    cln_config_install(c);
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_set_queue_hints(cl_command_queue queue, const clnorm_plan_hints *hints)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st && hints) st = cln_hints_check(hints);
    if (st) return st;
    return cln_queue_hints_set(queue, ctx, hints);
}

clnorm_status clnorm_set_thread_hints(const clnorm_plan_hints *hints)
{
    clnorm_status st = hints ? cln_hints_check(hints) : CLNORM_SUCCESS;
    if (st) return st;
    cln_thread_hints_set(hints);
    return CLNORM_SUCCESS;
}
