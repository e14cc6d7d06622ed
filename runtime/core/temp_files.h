/*
 * The temp files and folders this process is writing (the door writes a
 * file under a temp name beside it, then renames it into place), kept where
 * a signal handler can remove them: clformer_door_remove_temps
 * (clformer.h) is async-signal-safe, so a command killed by SIGINT or
 * SIGTERM in the middle of a save leaves nothing behind.
 */
#ifndef CF_TEMP_FILES_H
#define CF_TEMP_FILES_H

#include "clformer.h"

#include <stdbool.h>

/* Records `path` (a file, or with `folder` an empty folder of temp files
 * recorded before it is removed) as a temp of this process; *slot is what
 * cf_temp_forget takes. CLFORMER_ERR_IO when too many are open at once. */
clformer_status cf_temp_record(const char *path, bool folder, int *slot);

/* The temp was renamed into place or removed: no longer the handler's. */
void cf_temp_forget(int slot);

#endif
