/* clformer_set_error (clformer_util.h): the command reports its own
 * failures through clformer_last_error(), as the library does. */
#include "clformer_util.h"
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

clformer_status clformer_set_error(clformer_status status, const char *format, ...)
{
    char message[4096];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    return cf_fail(status, "%s", message);
}
