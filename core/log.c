/* SPDX-License-Identifier: Apache-2.0 */
/* Logging through the runtime's sink; the default sink writes to stderr at KP_LOG's level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime.h"

kp_log_level kp__log_env_level(void)
{
    const char *v = getenv("KP_LOG");
    if (!v || !*v)
        return KP_LOG_WARN;
    for (int l = KP_LOG_ERROR; l <= KP_LOG_DEBUG; l++)
        if (strcasecmp(v, kp_log_level_name((kp_log_level)l)) == 0)
            return (kp_log_level)l;
    if (strcasecmp(v, "warning") == 0)
        return KP_LOG_WARN;
    return KP_LOG_WARN;
}

void kp__logv(const kp_runtime *rt, kp_log_level level, const char *fmt, va_list ap)
{
    kp_log_level limit = rt ? rt->log_level : kp__log_env_level();
    if (level > limit)
        return;
    char *msg = kp__vasprintf(fmt, ap);
    if (!msg)
        return;
    /* One call per line, so sinks never see embedded newlines. */
    for (char *line = msg, *end; line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end)
            *end = '\0';
        if (rt && rt->log)
            rt->log(rt->log_user, level, line);
        else
            fprintf(stderr, "kernelport: %s: %s\n", kp_log_level_name(level), line);
    }
    free(msg);
}

void kp__log(const kp_runtime *rt, kp_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp__logv(rt, level, fmt, ap);
    va_end(ap);
}
