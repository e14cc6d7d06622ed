/* CLFORMER_LOG-filtered messages on stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static cf_log_level threshold(void)
{
    const char *v = getenv("CLFORMER_LOG");
    if (!v || !*v) return CF_LOG_WARN;
    if (!strcasecmp(v, "error")) return CF_LOG_ERROR;
    if (!strcasecmp(v, "info")) return CF_LOG_INFO;
    if (!strcasecmp(v, "debug")) return CF_LOG_DEBUG;
    return CF_LOG_WARN;
}

int cf_log_enabled(cf_log_level level) { return level <= threshold(); }

void cf_log(cf_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (!cf_log_enabled(level)) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "clformer %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
