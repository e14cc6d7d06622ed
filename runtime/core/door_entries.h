/*
 * Inside the door (door.h): what it holds of each declared path, shared by
 * door.c (declaring, checking, opening), door_write.c (the writes) and
 * door_lock.c (the locks of locked outputs).
 */
#ifndef CF_DOOR_ENTRIES_H
#define CF_DOOR_ENTRIES_H

#include "door.h"
#include "real_path.h"

#include <sys/stat.h>

typedef struct {
    dev_t dev;
    ino_t ino;
} cf_file_id;

typedef struct {
    char *what;          /* "--save": how messages name it */
    char *path;          /* as given (a lock: its output's path + ".lock") */
    bool output;
    bool lock;           /* the lock file of output `locks` */
    size_t locks;
    unsigned flags;      /* outputs: CLFORMER_WRITE_* | CF_WRITE_NUMBERED */
    char *replaces;      /* see cf_door_output_spec */
    cf_door_owner owner;
    void *owner_user;
    cf_real_path rp;     /* resolved when the door opens */
    /* the files this run put here (a numbered output: several) */
    cf_file_id *made;
    size_t n_made;
    /* a lock held: its descriptor (-1: none) and temp record */
    int lock_fd, lock_slot;
    /* a stream output that is a FIFO: its write end, opened when the door
     * opens (so a missing reader is found then) and held until written
     * (opening and closing it early would end the reader's input) */
    int fifo_fd;
    /* a directory output being written: the fresh folder, and the records
     * of the files committed into it (removed with it on a signal) */
    char *scratch;
    int scratch_slots[16];
    size_t n_scratch;
} cf_door_entry;

struct clformer_door {
    cf_door_entry *e;
    size_t n, cap;
    bool opened;
    char *hint;              /* how a user allows replacing ("add --overwrite") */
    clformer_door *outer;    /* the door current on this thread before this one */
};

/* True when `real` matches a numbered output's resolved pattern. */
bool cf_door_numbered_match(const char *pattern, const char *real);

/* The entry of the output that `rp` writes (a numbered output's match, a
 * file inside a directory output's fresh folder), or an error naming
 * `path` as undeclared. */
clformer_status cf_door_lookup(clformer_door *d, const char *path, const cf_real_path *rp,
                               size_t *index);

/* Whether the existing file `real` (stat `sb`) may be replaced by output e:
 * declared so, made by this run, the input e may replace, or the run's own. */
bool cf_door_may_replace(const clformer_door *d, const cf_door_entry *e, const char *real,
                         const struct stat *sb);

/* Whether the existing file `real` is the run's own: made by this process
 * at e, or its owner says so (what a numbered output may remove). */
bool cf_door_entry_owns(const cf_door_entry *e, const char *real, const struct stat *sb);

/* Records that the run put the file (dev, ino) at e. */
clformer_status cf_door_note_made(cf_door_entry *e, dev_t dev, ino_t ino);

/* A temp name beside `real`: "<first 100 bytes of its name>.tmp.<pid>.<n>"
 * (malloc'd), short enough beside any legal name. */
char *cf_door_temp_name(const char *real);

/* One-line refusals shared by the checks at open and at write time. */
clformer_status cf_door_refuse_kind(const cf_door_entry *e, const char *path, mode_t mode);
clformer_status cf_door_refuse_existing(const clformer_door *d, const cf_door_entry *e,
                                        const char *path);
/* A FIFO with no reader would block the write forever: refused. Opens its
 * write end (without waiting) when it has one, blocking from then on. */
clformer_status cf_door_open_fifo(const cf_door_entry *e, const char *path, int *fd);

/* The descriptor a path names ("/dev/stdout" 1, "/dev/stderr" 2, "/dev/fd/N",
 * "/proc/self/fd/N"), or -1: a stream output there is written to that
 * descriptor as it is (a file the shell opened, appending or not). */
int cf_door_descriptor_of(const char *path);

/* A descriptor to write stream output e at `path` in place (a duplicate of
 * the FIFO's held one, the named descriptor's, or the device opened), or a
 * refusal when e is not a stream or `path` is neither. */
clformer_status cf_door_stream_fd(cf_door_entry *e, const char *path, mode_t mode, int *fd);

/* The locks (door_lock.c): taken when the door opens, released when it is freed. */
clformer_status cf_door_lock_take(clformer_door *d, size_t index);
void cf_door_lock_release(cf_door_entry *e);

#endif
