/*
 * The lock of a locked output (CLFORMER_WRITE_LOCKED): one run at a time
 * writes a file. An advisory lock (fcntl) on "<real path>.lock", held for
 * the whole run: every name of the file (a symbolic link, "..") reaches the
 * same lock, and the lock goes with the process (kill -9 releases it).
 * The lock file says it is one; a file of that name that does not is the
 * user's and is refused, never replaced or removed. A lock file left by a
 * run that ended without removing it (a signal during its start) is reused.
 */
#include "door_entries.h"
#include "status.h"
#include "temp_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char magic[] = "clformer lock";

static clformer_status foreign(const cf_door_entry *e, const cf_door_entry *locked)
{
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' exists and is not a clformer lock file: "
                   "%s '%s' is locked through that name; move it, or choose another name for %s",
                   e->path, locked->what, locked->path, locked->what);
}

/* Does the lock file at fd start with the magic words? */
static bool is_lock_file(int fd)
{
    char head[sizeof magic - 1];
    const ssize_t got = pread(fd, head, sizeof head, 0);
    return got == (ssize_t)sizeof head && !memcmp(head, magic, sizeof head);
}

clformer_status cf_door_lock_take(clformer_door *d, size_t index)
{
    cf_door_entry *e = &d->e[index];
    const cf_door_entry *locked = &d->e[e->locks];
    const char *path = e->rp.real;
    /* A run that ends removes the file while it holds the lock; a run that
     * locked a removed file tries again on the new one, so two runs never
     * hold locks on different files of one name. POSIX record locks: this
     * process opens the file once, so no other close drops the lock. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        const bool made = fd >= 0;
        if (!made) {
            if (errno != EEXIST)
                return cf_fail(CLFORMER_ERR_IO, "cannot create the lock file '%s' of %s: %s",
                               e->path, locked->what, strerror(errno));
            fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0 && errno == ENOENT) continue; /* removed meanwhile */
            if (fd < 0 && errno != ELOOP && errno != EISDIR)
                return cf_fail(CLFORMER_ERR_IO, "cannot open the lock file '%s' of %s: %s",
                               e->path, locked->what, strerror(errno));
            struct stat sb;
            if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
                if (fd >= 0) close(fd);
                return foreign(e, locked);
            }
        }
        struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        if (fcntl(fd, F_SETLK, &whole) != 0) {
            const int err = errno;
            close(fd);
            char shown[4096];
            if (err == EACCES || err == EAGAIN)
                return cf_fail(CLFORMER_ERR_IO, "another run is writing '%s' (it holds '%s'); "
                               "wait for it to end, or choose another name for %s", locked->path,
                               cf_real_path_shown(path, shown, sizeof shown), locked->what);
            return cf_fail(CLFORMER_ERR_IO, "cannot lock '%s': %s", e->path, strerror(err));
        }
        if (!made && !is_lock_file(fd)) {
            close(fd);
            return foreign(e, locked);
        }
        struct stat held, named;
        if (fstat(fd, &held) != 0 || stat(path, &named) != 0 || held.st_dev != named.st_dev ||
            held.st_ino != named.st_ino) {
            close(fd); /* removed under us by a run that just ended: again */
            continue;
        }
        char text[160];
        const int n = snprintf(text, sizeof text, "%s: held by process %ld while it writes "
                               "the file of this name less \".lock\"\n", magic, (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
            const int err = errno;
            close(fd);
            if (made) unlink(path);
            return cf_fail(CLFORMER_ERR_IO, "cannot write the lock file '%s': %s", e->path,
                           strerror(err));
        }
        clformer_status st = cf_temp_record(path, false, &e->lock_slot); /* a signal removes it */
        if (st != CLFORMER_OK) {
            close(fd);
            if (made) unlink(path);
            return st;
        }
        e->lock_fd = fd;
        return CLFORMER_OK;
    }
    return cf_fail(CLFORMER_ERR_IO, "cannot lock '%s': it keeps being removed", e->path);
}

void cf_door_lock_release(cf_door_entry *e)
{
    if (e->lock_fd < 0) return;
    struct stat held, named;
    /* only the file this run holds: never one made since under its name */
    if (fstat(e->lock_fd, &held) == 0 && stat(e->rp.real, &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
        unlink(e->rp.real);
    cf_temp_forget(e->lock_slot);
    close(e->lock_fd);
    e->lock_fd = e->lock_slot = -1;
}
