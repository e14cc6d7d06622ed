/* The temp files a signal handler removes (see temp_files.h). */
#include "temp_files.h"
#include "status.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { MAX_TEMPS = 64 };
enum { FREE = 0, BUSY = 1, LIVE = 2 };

/* A slot goes FREE -> BUSY (claimed, being filled) -> LIVE -> FREE; the
 * handler reads only LIVE slots, whose path is complete. */
static struct {
    atomic_int state;
    bool folder;
    char path[PATH_MAX];
} temps[MAX_TEMPS];

clformer_status cf_temp_record(const char *path, bool folder, int *slot)
{
    *slot = -1;
    if (strlen(path) >= PATH_MAX)
        return cf_fail(CLFORMER_ERR_IO, "'%s': the path is too long", path);
    for (int i = 0; i < MAX_TEMPS; i++) {
        int expected = FREE;
        if (!atomic_compare_exchange_strong(&temps[i].state, &expected, BUSY)) continue;
        strcpy(temps[i].path, path);
        temps[i].folder = folder;
        atomic_store(&temps[i].state, LIVE);
        *slot = i;
        return CLFORMER_OK;
    }
    return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %d files are being written at once "
                   "already", path, MAX_TEMPS);
}

void cf_temp_forget(int slot)
{
    if (slot >= 0 && slot < MAX_TEMPS) atomic_store(&temps[slot].state, FREE);
}

/* unlink and rmdir only: async-signal-safe. Files first, then the folders
 * that held them. */
void clformer_door_remove_temps(void)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < MAX_TEMPS; i++) {
            if (atomic_load(&temps[i].state) != LIVE || temps[i].folder != (pass == 1)) continue;
            if (pass == 0) unlink(temps[i].path);
            else rmdir(temps[i].path);
        }
}
