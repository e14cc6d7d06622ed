/* The library's version, for programs that check the header they were
 * compiled with against the library they run with. */
#include "clformer.h"

const char *clformer_version(void)
{
    return CLFORMER_VERSION;
}
