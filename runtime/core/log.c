/* Messages filtered by a sink's level, to its callback or to stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

const cf_log_sink cf_log_default = {CF_LOG_WARN, NULL, NULL};

int cf_log_enabled(const cf_log_sink *sink, cf_log_level level)
{
    return level <= (sink ? sink : &cf_log_default)->level;
}

void cf_log(const cf_log_sink *sink, cf_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (!sink) sink = &cf_log_default;
    if (!cf_log_enabled(sink, level)) return;
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (sink->callback)
        sink->callback(level, message, sink->user);
    else
        fprintf(stderr, "clformer %s: %s\n", names[level], message);
}
