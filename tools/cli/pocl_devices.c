/* PoCL's basic device for selectors that name it (pocl_devices.h). */
#include "pocl_devices.h"

#include <stdlib.h>
#include <strings.h>

static bool user_set; /* POCL_DEVICES was set before this process touched it */
static bool turned_on; /* this process set it */

static bool names_basic(const char *selector)
{
    for (const char *p = selector; p && *p; p++)
        if (!strncasecmp(p, "basic", 5)) return true;
    return false;
}

void pocl_devices_for_selector(void)
{
    user_set = getenv("POCL_DEVICES") != NULL;
    const char *sel = getenv("CLFORMER_DEVICE");
    if (user_set || !names_basic(sel)) return;
    setenv("POCL_DEVICES", "pthread basic", 0);
    turned_on = true;
}

bool pocl_devices_same_list(const char *selector)
{
    return user_set || names_basic(selector) == turned_on;
}
