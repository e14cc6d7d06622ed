/*
 * Diagnostic logging to stderr, filtered by CLFORMER_LOG
 * (error | warn | info | debug; default warn). Logging is for people
 * watching a run; failures are reported through statuses, not here.
 */
#ifndef CF_LOG_H
#define CF_LOG_H

typedef enum { CF_LOG_ERROR = 0, CF_LOG_WARN, CF_LOG_INFO, CF_LOG_DEBUG } cf_log_level;

/* True when messages of `level` are shown. */
int cf_log_enabled(cf_log_level level);

void cf_log(cf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
