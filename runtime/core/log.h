/*
 * Diagnostic logging. Each context carries a sink (its level and, when the
 * caller gave one, a callback; else lines on stderr), set from
 * clformer_context_params. Logging is for people watching a run; failures
 * are reported through statuses, not here.
 */
#ifndef CF_LOG_H
#define CF_LOG_H

#include "clformer.h"

typedef clformer_log_level cf_log_level;
#define CF_LOG_ERROR CLFORMER_LOG_ERROR
#define CF_LOG_WARN CLFORMER_LOG_WARN
#define CF_LOG_INFO CLFORMER_LOG_INFO
#define CF_LOG_DEBUG CLFORMER_LOG_DEBUG

typedef struct {
    cf_log_level level; /* messages up to this level are shown */
    clformer_log_callback callback; /* NULL: stderr */
    void *user;
} cf_log_sink;

/* Where messages go when there is no context: warnings and errors on stderr. */
extern const cf_log_sink cf_log_default;

/* True when `sink` (NULL: cf_log_default) shows messages of `level`. */
int cf_log_enabled(const cf_log_sink *sink, cf_log_level level);

void cf_log(const cf_log_sink *sink, cf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
