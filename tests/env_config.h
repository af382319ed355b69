/* CLNORM_* settings in the test cases. The library reads the CLNORM_* environment
   once, into its process configuration; a case that wants another setting changes
   that configuration through the advanced API, here (env_config.c). */
#ifndef CLNORM_TEST_ENV_CONFIG_H
#define CLNORM_TEST_ENV_CONFIG_H

#include "clnorm.h"
#include <stddef.h>

/* Gives the process configuration the setting that variable `name` set to value
   (NULL: unset) gives, parsed by the library's own reader (clnorm_config_from_env):
   a CLNORM_* variable sets its field; HOME and XDG_CACHE_HOME, which the default
   cache folder follows, set none but the folder is worked out again. The variable
   is set too (t_setenv), so that labels and a later clnorm_config_from_env see it.
   The configuration in force before a case's first change comes back at
   t_config_restore (t_env_restore calls it after every case). Returns the parse
   status: a value the reader refuses (INVALID_ARGUMENT, naming the variable)
   leaves the field as it was. */
clnorm_status t_config(const char *name, const char *value);
clnorm_status t_config_num(const char *name, size_t value);
/* Puts back the configuration of the case's start (if a change was made) and removes
   the calling thread's plan hints. */
void t_config_restore(void);

#endif
