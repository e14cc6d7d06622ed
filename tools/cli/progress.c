/* Progress lines (see progress.h). */
#include "progress.h"

#include <math.h>
#include <stdio.h>

void progress_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, size, "?");
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, size, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

void progress_line(char *buf, size_t size, const char *doing, const char *items, size_t done,
                   size_t total, double elapsed)
{
    const double rate = elapsed > 0 && done > 0 ? (double)done / elapsed : NAN;
    char eta[32];
    progress_duration(done >= total ? 0.0 : (double)(total - done) / rate, eta, sizeof eta);
    snprintf(buf, size, "%s: %zu/%zu %s (%.0f%%), %.1f %s/s, ETA %s", doing, done, total, items,
             total ? 100.0 * (double)done / (double)total : 100.0, isfinite(rate) ? rate : 0.0,
             items, eta);
}
