/* The advisory lock of a run's checkpoint path (see save_lock.h). */
#include "save_lock.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int save_lock_take(const char *command, const char *save_path, save_lock *lock)
{
    lock->fd = -1;
    size_t size = strlen(save_path) + 6;
    lock->path = malloc(size);
    if (!lock->path) {
        cli_error(command, "out of host memory");
        return 1;
    }
    snprintf(lock->path, size, "%s.lock", save_path);
    /* A run that ends removes the file while holding the lock; a run that
     * locked the removed file retries on the new one, so two runs never hold
     * locks on different files of the same name. POSIX record locks (fcntl):
     * this process opens the file once, so no other close drops the lock. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(lock->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            cli_error(command, "cannot create the lock file '%s' of --save: %s", lock->path,
                      strerror(errno));
            break;
        }
        struct flock whole = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        if (fcntl(fd, F_SETLK, &whole) != 0) {
            const int err = errno;
            close(fd);
            if (err == EACCES || err == EAGAIN)
                cli_error(command, "another training run is saving to '%s' (it holds '%s'); "
                          "wait for it to end, or choose another --save", save_path, lock->path);
            else
                cli_error(command, "cannot lock '%s': %s", lock->path, strerror(err));
            break;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(lock->path, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            lock->fd = fd;
            return 0;
        }
        close(fd); /* removed under us by a run that just ended: again */
    }
    free(lock->path);
    lock->path = NULL;
    return 1;
}

void save_lock_release(save_lock *lock)
{
    if (lock->fd >= 0) {
        unlink(lock->path);
        close(lock->fd);
    }
    free(lock->path);
    lock->fd = -1;
    lock->path = NULL;
}
