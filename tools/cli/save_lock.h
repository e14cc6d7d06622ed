/*
 * One training run per checkpoint path: `clformer train` holds an advisory
 * lock (fcntl) on "<save path>.lock" for the whole run, so a second run
 * saving to the same file is refused at its start instead of both printing
 * "saved" and the last writer winning. The lock goes with the process (a
 * kill -9 releases it); the lock file is removed at the end of the run.
 */
#ifndef CLFORMER_SAVE_LOCK_H
#define CLFORMER_SAVE_LOCK_H

typedef struct {
    int fd;      /* -1: none held */
    char *path;  /* the lock file */
} save_lock;

/* Takes the lock of `save_path`; 0, or 1 after printing why not (another run
 * holds it, or the lock file cannot be made). */
int save_lock_take(const char *command, const char *save_path, save_lock *lock);

/* Removes the lock file and releases the lock (a lock not held is fine). */
void save_lock_release(save_lock *lock);

#endif
