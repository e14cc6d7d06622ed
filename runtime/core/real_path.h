/*
 * What file a path names, whether it exists or not: the door (door.h)
 * compares a run's paths by the file they reach, not by how they are
 * spelled, so that "m", "./m", "d/../m", a symbolic link to m and (through
 * the device and inode) a hard link of m are one file.
 */
#ifndef CF_REAL_PATH_H
#define CF_REAL_PATH_H

#include "clformer.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
    char *real;      /* absolute, no "." or "..", every symbolic link followed (malloc'd) */
    bool exists;     /* the file is there (then dev, ino and mode hold) */
    dev_t dev;
    ino_t ino;
    mode_t mode;     /* st_mode: S_ISREG, S_ISDIR, S_ISFIFO ... */
} cf_real_path;

/* Resolves `path`: its symbolic links are followed (a dangling one to its
 * target), the longest part that exists is made canonical, and the rest is
 * appended with "." and ".." applied. CLFORMER_ERR_IO names `path` when a
 * link cannot be read or loops. */
clformer_status cf_real_path_of(const char *path, cf_real_path *out);
void cf_real_path_free(cf_real_path *p);

/* True when a and b are the same file: the same device and inode when both
 * exist, else the same resolved path. */
bool cf_real_path_same(const cf_real_path *a, const cf_real_path *b);

/* True when `inner` lies inside the directory `dir` (resolved paths). */
bool cf_real_path_inside(const char *inner, const char *dir);

/* How messages show a resolved path: relative to the working folder when
 * it lies inside it (into buf). */
const char *cf_real_path_shown(const char *real, char *buf, size_t cap);

/* The folder of a resolved path (malloc'd; "/" for a file at the root). */
char *cf_real_path_dir(const char *real);

#endif
