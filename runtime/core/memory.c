/* clformer_free: the one way to release memory the library hands out
 * (docs/API.md), so that its allocator can change without breaking callers. */
#include "clformer.h"

#include <stdlib.h>

void clformer_free(void *p) { free(p); }
