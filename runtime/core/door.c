/* The door: declaring a run's paths and checking them before any write
 * (see door.h; the writes are door_write.c, the locks door_lock.c). */
#include "door_entries.h"
#include "status.h"
#include "temp_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local clformer_door *current;

clformer_door *cf_door_current(void) { return current; }

void cf_door_enter(clformer_door *d)
{
    if (!d || current == d) return;
    d->outer = current;
    current = d;
}

void cf_door_leave(clformer_door *d)
{
    if (d && current == d) current = d->outer;
}

clformer_status clformer_door_create(clformer_door **door)
{
    *door = calloc(1, sizeof **door);
    if (!*door) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return CLFORMER_OK;
}

void clformer_door_free(clformer_door *d)
{
    if (!d) return;
    if (d->opened) { /* no longer current: unlink it from this thread's chain */
        if (current == d) current = d->outer;
        else
            for (clformer_door *c = current; c; c = c->outer)
                if (c->outer == d) c->outer = d->outer;
    }
    for (size_t i = 0; i < d->n; i++) {
        cf_door_entry *e = &d->e[i];
        cf_door_lock_release(e);
        if (e->fifo_fd >= 0) close(e->fifo_fd);
        free(e->what);
        free(e->path);
        free(e->replaces);
        free(e->owner_user);
        free(e->made);
        free(e->scratch);
        cf_real_path_free(&e->rp);
    }
    free(d->e);
    free(d->hint);
    free(d);
}

void clformer_door_set_hint(clformer_door *d, const char *how_to_replace)
{
    free(d->hint);
    d->hint = how_to_replace ? strdup(how_to_replace) : NULL;
}

static clformer_status add(clformer_door *d, const char *what, const char *path, bool output,
                           cf_door_entry **out)
{
    if (d->opened)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' (%s) was declared after the door "
                       "opened: declare every path first", path, what);
    if (d->n == d->cap) {
        const size_t cap = d->cap ? 2 * d->cap : 16;
        cf_door_entry *grown = realloc(d->e, cap * sizeof *grown);
        if (!grown) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        d->e = grown;
        d->cap = cap;
    }
    cf_door_entry *e = &d->e[d->n];
    memset(e, 0, sizeof *e);
    e->lock_fd = e->lock_slot = e->fifo_fd = -1;
    e->output = output;
    e->what = strdup(what);
    e->path = strdup(path);
    if (!e->what || !e->path) {
        free(e->what);
        free(e->path);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    d->n++;
    *out = e;
    return CLFORMER_OK;
}

clformer_status clformer_door_read(clformer_door *d, const char *what, const char *path)
{
    if (!path || !strcmp(path, "-")) return CLFORMER_OK; /* not given, or stdin */
    cf_door_entry *e;
    return add(d, what, path, false, &e);
}

clformer_status cf_door_output(clformer_door *d, const char *what, const char *path,
                               const cf_door_output_spec *spec)
{
    if (!path) {
        free(spec->owner_user);
        return CLFORMER_OK;
    }
    const unsigned f = spec->flags;
    if ((f & CLFORMER_WRITE_DIRECTORY) && (f & (CLFORMER_WRITE_STREAM | CLFORMER_WRITE_APPEND |
                                                CLFORMER_WRITE_LOCKED | CF_WRITE_NUMBERED))) {
        free(spec->owner_user);
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: a directory output is written whole "
                       "(not a stream, appended, locked or numbered)", what);
    }
    cf_door_entry *e;
    clformer_status st = add(d, what, path, true, &e);
    if (st != CLFORMER_OK) {
        free(spec->owner_user);
        return st;
    }
    e->flags = f;
    e->owner = spec->owner;
    e->owner_user = spec->owner_user;
    if (spec->replaces && !(e->replaces = strdup(spec->replaces)))
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!(f & CLFORMER_WRITE_LOCKED)) return CLFORMER_OK;
    /* the lock file is an output of the run too: it must clash with nothing */
    const size_t locked = d->n - 1;
    char what_lock[256], *lock_path = malloc(strlen(path) + 6);
    if (!lock_path) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(lock_path, strlen(path) + 6, "%s.lock", path);
    snprintf(what_lock, sizeof what_lock, "the lock file of %s", what);
    st = add(d, what_lock, lock_path, true, &e);
    free(lock_path);
    if (st != CLFORMER_OK) return st;
    e->lock = true;
    e->locks = locked;
    return CLFORMER_OK;
}

clformer_status clformer_door_write(clformer_door *d, const char *what, const char *path,
                                    unsigned flags)
{
    const unsigned known = CLFORMER_WRITE_REPLACE | CLFORMER_WRITE_STREAM |
                           CLFORMER_WRITE_DIRECTORY | CLFORMER_WRITE_LOCKED |
                           CLFORMER_WRITE_APPEND;
    if (flags & ~known)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: unknown write flags 0x%x", what,
                       flags & ~known);
    const cf_door_output_spec spec = {flags, NULL, NULL, NULL};
    return cf_door_output(d, what, path, &spec);
}

size_t clformer_door_count(const clformer_door *d) { return d ? d->n : 0; }

bool clformer_door_entry(const clformer_door *d, size_t i, const char **what, const char **path,
                         bool *output, unsigned *flags)
{
    if (!d || i >= d->n) return false;
    const cf_door_entry *e = &d->e[i];
    if (what) *what = e->what;
    if (path) *path = e->path;
    if (output) *output = e->output;
    if (flags) *flags = e->flags | (e->lock ? CLFORMER_WRITE_LOCK_FILE : 0);
    return true;
}

/* --- matching --------------------------------------------------------------- */

bool cf_door_numbered_match(const char *pattern, const char *real)
{
    const char *star = strchr(pattern, '*');
    if (!star) return false;
    const size_t head = (size_t)(star - pattern), tail = strlen(star + 1), n = strlen(real);
    if (n <= head + tail || strncmp(real, pattern, head) || strcmp(real + n - tail, star + 1))
        return false;
    for (size_t i = head; i < n - tail; i++)
        if (real[i] < '0' || real[i] > '9') return false;
    return true;
}

/* Calls fn for each file in the folder of numbered output e whose path
 * matches it; stops at (and returns) the first failing status. */
static clformer_status each_numbered(const cf_door_entry *e,
                                     clformer_status (*fn)(const char *path, void *user),
                                     void *user)
{
    char *dir = cf_real_path_dir(e->rp.real);
    DIR *folder = dir ? opendir(dir) : NULL;
    clformer_status st = CLFORMER_OK;
    for (struct dirent *f; folder && st == CLFORMER_OK && (f = readdir(folder)) != NULL;) {
        const size_t size = strlen(dir) + strlen(f->d_name) + 2;
        char *path = malloc(size);
        if (!path) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        snprintf(path, size, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", f->d_name);
        if (cf_door_numbered_match(e->rp.real, path)) st = fn(path, user);
        free(path);
    }
    if (folder) closedir(folder);
    free(dir);
    return st;
}

/* --- the checks when the door opens ------------------------------------------ */

static clformer_status refuse_input(const cf_door_entry *o, const cf_door_entry *in,
                                    const char *how)
{
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s '%s' %s the input %s '%s': writing it would destroy that input; choose "
                   "another name", o->what, o->path, how, in->what, in->path);
}

static clformer_status refuse_output(const cf_door_entry *o, const cf_door_entry *other)
{
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s '%s' is also the output %s '%s': one would overwrite the other; give "
                   "each output its own file", o->what, o->path, other->what, other->path);
}

typedef struct {
    const cf_door_entry *x;
    bool same;
} same_as;

static clformer_status note_same_file(const char *path, void *user)
{
    same_as *s = user;
    struct stat sb;
    if (s->x->rp.exists && stat(path, &sb) == 0 && sb.st_dev == s->x->rp.dev &&
        sb.st_ino == s->x->rp.ino)
        s->same = true;
    return CLFORMER_OK;
}

/* What output o writes, against x (an input, or a later output). */
static clformer_status check_pair(const cf_door_entry *o, const cf_door_entry *x)
{
    const bool o_num = o->flags & CF_WRITE_NUMBERED, x_num = x->output && (x->flags & CF_WRITE_NUMBERED);
    const bool o_dir = o->flags & CLFORMER_WRITE_DIRECTORY;
    const bool x_dir = x->output ? (x->flags & CLFORMER_WRITE_DIRECTORY)
                                 : x->rp.exists && S_ISDIR(x->rp.mode);
    bool clash = false;
    const char *how = "is the same file as";
    if (o_num || x_num) {
        const cf_door_entry *n = o_num ? o : x, *other = o_num ? x : o;
        if (o_num && x_num) clash = !strcmp(o->rp.real, x->rp.real);
        else if (cf_door_numbered_match(n->rp.real, other->rp.real)) clash = true;
        else {
            same_as s = {other, false}; /* a hard link of the input under a numbered name */
            CF_TRY(each_numbered(n, note_same_file, &s));
            clash = s.same;
        }
        how = "would write";
    } else if (o_dir && (cf_real_path_same(&o->rp, &x->rp) ||
                         cf_real_path_inside(x->rp.real, o->rp.real))) {
        clash = true;
        how = "is a folder that holds";
    } else if (x_dir && cf_real_path_inside(o->rp.real, x->rp.real)) {
        clash = true;
        how = "is inside";
    } else {
        clash = cf_real_path_same(&o->rp, &x->rp);
        if (clash && !x->output && o->replaces && !strcmp(o->replaces, x->what)) clash = false;
    }
    if (!clash) return CLFORMER_OK;
    if (!x->output) return refuse_input(o, x, how);
    return o_num && !x_num ? refuse_output(x, o) : refuse_output(o, x);
}

clformer_status cf_door_refuse_kind(const cf_door_entry *e, const char *path, mode_t mode)
{
    const char *kind = S_ISDIR(mode)    ? "a folder"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                       : S_ISFIFO(mode) ? "a FIFO"
                       : S_ISSOCK(mode) ? "a socket"
                       : S_ISREG(mode)  ? "a file"
                                        : "not a regular file";
    if (e->flags & CLFORMER_WRITE_DIRECTORY)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s '%s' is %s: it is written as a "
                       "folder; name a new folder", e->what, path, kind);
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s '%s' is %s: it is written to a regular "
                   "file; name one", e->what, path, kind);
}

clformer_status cf_door_refuse_existing(const clformer_door *d, const cf_door_entry *e,
                                        const char *path)
{
    const char *hint = d->hint ? d->hint : "or declare it CLFORMER_WRITE_REPLACE to replace it";
    char shown[4096];
    if (e->flags & CF_WRITE_NUMBERED)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s '%s': '%s' exists and is not this run's (no checkpoint of this run "
                       "names it): it would be mixed with this run's files; move it, choose "
                       "another name, %s (replaced if the run writes that step)", e->what,
                       e->path, cf_real_path_shown(path, shown, sizeof shown), hint);
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s '%s' exists and this run did not make it: clformer replaces only what "
                   "it was asked to; choose another name, %s", e->what, path, hint);
}

clformer_status cf_door_open_fifo(const cf_door_entry *e, const char *path, int *fd)
{
    *fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0 && errno == ENXIO)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s '%s' is a FIFO with no reader: "
                       "start its reader first (clformer does not wait for one)", e->what, path);
    if (*fd < 0)
        return cf_fail(CLFORMER_ERR_IO, "%s: cannot write '%s': %s", e->what, path,
                       strerror(errno));
    const int flags = fcntl(*fd, F_GETFL);
    if (flags < 0 || fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        const int err = errno;
        close(*fd);
        *fd = -1;
        return cf_fail(CLFORMER_ERR_IO, "%s: cannot write '%s': %s", e->what, path,
                       strerror(err));
    }
    return CLFORMER_OK;
}

int cf_door_descriptor_of(const char *path)
{
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *n = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                           : NULL;
    if (!n || !*n || strspn(n, "0123456789") != strlen(n) || strlen(n) > 6) return -1;
    return atoi(n);
}

clformer_status cf_door_stream_fd(cf_door_entry *e, const char *path, mode_t mode, int *fd)
{
    *fd = -1;
    const int named = cf_door_descriptor_of(path);
    if (!(e->flags & CLFORMER_WRITE_STREAM) ||
        (named < 0 && !S_ISFIFO(mode) && !S_ISCHR(mode)))
        return cf_door_refuse_kind(e, path, mode);
    if (named >= 0) *fd = fcntl(named, F_DUPFD_CLOEXEC, 3);
    else if (S_ISFIFO(mode) && e->fifo_fd >= 0) *fd = fcntl(e->fifo_fd, F_DUPFD_CLOEXEC, 3);
    else if (S_ISFIFO(mode)) return cf_door_open_fifo(e, path, fd);
    else *fd = open(path, O_WRONLY | O_CLOEXEC);
    if (*fd < 0)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return CLFORMER_OK;
}

/* The names of a folder, all of which are in `known` (NULL-terminated)? */
static bool holds_only(const char *dir, const char *const *known, bool *empty)
{
    DIR *folder = opendir(dir);
    if (!folder) return false;
    bool only = true;
    *empty = true;
    for (struct dirent *f; only && (f = readdir(folder)) != NULL;) {
        if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, "..")) continue;
        *empty = false;
        bool listed = false;
        for (size_t k = 0; known[k] && !listed; k++) listed = !strcmp(known[k], f->d_name);
        only = listed;
    }
    closedir(folder);
    return only;
}

typedef struct {
    const clformer_door *d;
    const cf_door_entry *e;
} numbered_check;

static clformer_status check_numbered_file(const char *path, void *user)
{
    const numbered_check *c = user;
    struct stat sb;
    if (lstat(path, &sb) != 0) return CLFORMER_OK; /* gone meanwhile */
    if (!S_ISREG(sb.st_mode)) return cf_door_refuse_kind(c->e, path, sb.st_mode);
    if (cf_door_may_replace(c->d, c->e, path, &sb)) return CLFORMER_OK;
    return cf_door_refuse_existing(c->d, c->e, path);
}

/* What is at output e now: nothing (its folder must exist), a file it may
 * replace, a folder it may replace (directory outputs), a stream. */
static clformer_status check_state(const clformer_door *d, cf_door_entry *e)
{
    if (e->lock) return CLFORMER_OK; /* the lock itself tells (door_lock.c) */
    if (e->flags & CF_WRITE_NUMBERED) {
        const numbered_check c = {d, e};
        return each_numbered(e, check_numbered_file, (void *)&c);
    }
    const cf_real_path *rp = &e->rp;
    if ((e->flags & CLFORMER_WRITE_STREAM) && cf_door_descriptor_of(e->path) >= 0)
        return CLFORMER_OK; /* written to the descriptor as it is */
    if (!rp->exists) {
        if (e->flags & CLFORMER_WRITE_DIRECTORY) return CLFORMER_OK; /* parents are made */
        char *dir = cf_real_path_dir(rp->real);
        struct stat sb;
        const bool ok = dir && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
        clformer_status st = ok ? CLFORMER_OK
                                : cf_fail(CLFORMER_ERR_IO, "%s '%s': its folder '%s' does not "
                                          "exist", e->what, e->path, dir ? dir : "?");
        free(dir);
        return st;
    }
    if (S_ISDIR(rp->mode) && (e->flags & CLFORMER_WRITE_DIRECTORY)) {
        bool empty = false;
        const bool only = holds_only(rp->real, cf_export_dir_names, &empty);
        if (empty || (only && (e->flags & CLFORMER_WRITE_REPLACE))) return CLFORMER_OK;
        if (!only)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s '%s' is a folder that holds "
                           "files clformer does not write there: name a new folder (clformer "
                           "replaces a folder only when it holds an earlier export alone)",
                           e->what, e->path);
        return cf_door_refuse_existing(d, e, e->path);
    }
    if (S_ISREG(rp->mode) && !(e->flags & CLFORMER_WRITE_DIRECTORY)) {
        struct stat sb;
        if (stat(rp->real, &sb) != 0 || cf_door_may_replace(d, e, rp->real, &sb))
            return CLFORMER_OK;
        return cf_door_refuse_existing(d, e, e->path);
    }
    if ((e->flags & CLFORMER_WRITE_STREAM) && S_ISFIFO(rp->mode))
        return cf_door_open_fifo(e, e->path, &e->fifo_fd); /* held until written */
    if ((e->flags & CLFORMER_WRITE_STREAM) && S_ISCHR(rp->mode)) {
        if (access(e->path, W_OK) != 0)
            return cf_fail(CLFORMER_ERR_IO, "%s: cannot write '%s': %s", e->what, e->path,
                           strerror(errno));
        return CLFORMER_OK;
    }
    return cf_door_refuse_kind(e, e->path, rp->mode);
}

/* Can the run make files beside output e? Creates and removes the very
 * temp file (or folder) a write will use: a read-only or full folder is
 * found now, not after hours of training. */
static clformer_status probe(const cf_door_entry *e)
{
    if (e->lock || ((e->flags & CLFORMER_WRITE_STREAM) &&
                    ((e->rp.exists && !S_ISREG(e->rp.mode)) || cf_door_descriptor_of(e->path) >= 0)))
        return CLFORMER_OK;
    char *real = strdup(e->rp.real);
    if (!real) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (e->flags & CLFORMER_WRITE_DIRECTORY) { /* the nearest folder that exists */
        struct stat sb;
        while (strcmp(real, "/") && (stat(real, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
                                     !strcmp(real, e->rp.real))) {
            char *up = cf_real_path_dir(real);
            free(real);
            if (!up) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            real = up;
            if (stat(real, &sb) == 0 && S_ISDIR(sb.st_mode)) break;
        }
        const size_t size = strlen(real) + 2;
        char *child = malloc(size + 1);
        if (child) snprintf(child, size + 1, "%s/x", real);
        free(real);
        real = child;
        if (!real) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    char *temp = cf_door_temp_name(real);
    free(real);
    if (!temp) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(temp);
    }
    clformer_status st = CLFORMER_OK;
    if (fd < 0) {
        char *dir = cf_real_path_dir(temp);
        st = cf_fail(CLFORMER_ERR_IO, "%s '%s': cannot write in the folder '%s': %s", e->what,
                     e->path, dir ? dir : "?", strerror(err));
        free(dir);
    }
    free(temp);
    return st;
}

static clformer_status resolve(clformer_door *d, cf_door_entry *e)
{
    if (!e->lock) return cf_real_path_of(e->path, &e->rp);
    const cf_door_entry *locked = &d->e[e->locks];
    const size_t size = strlen(locked->rp.real) + 6;
    char *lock_path = malloc(size);
    if (!lock_path) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(lock_path, size, "%s.lock", locked->rp.real); /* the real file's: links share it */
    clformer_status st = cf_real_path_of(lock_path, &e->rp);
    free(lock_path);
    return st;
}

clformer_status clformer_door_open(clformer_door *d)
{
    if (d->opened) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the door is open already");
    for (size_t i = 0; i < d->n; i++) CF_TRY(resolve(d, &d->e[i]));
    /* what the user can fix by naming other files first (usage errors) ... */
    for (size_t i = 0; i < d->n; i++) {
        cf_door_entry *o = &d->e[i];
        if (!o->output) continue;
        for (size_t k = 0; k < d->n; k++)
            if (!d->e[k].output) CF_TRY(check_pair(o, &d->e[k]));
        for (size_t k = i + 1; k < d->n; k++)
            if (d->e[k].output) CF_TRY(check_pair(o, &d->e[k]));
        CF_TRY(check_state(d, o));
    }
    /* ... then what the machine refuses (read-only folders) */
    for (size_t i = 0; i < d->n; i++)
        if (d->e[i].output) CF_TRY(probe(&d->e[i]));
    for (size_t i = 0; i < d->n; i++) {
        if (!d->e[i].lock) continue;
        clformer_status st = cf_door_lock_take(d, i);
        if (st != CLFORMER_OK) {
            for (size_t k = 0; k < i; k++) cf_door_lock_release(&d->e[k]);
            return st;
        }
    }
    d->opened = true;
    d->outer = current;
    current = d;
    return CLFORMER_OK;
}

/* --- at write time ------------------------------------------------------------ */

clformer_status cf_door_lookup(clformer_door *d, const char *path, const cf_real_path *rp,
                               size_t *index)
{
    for (size_t i = 0; i < d->n; i++) {
        const cf_door_entry *e = &d->e[i];
        if (!e->output || e->lock) continue;
        const bool hit = (e->flags & CF_WRITE_NUMBERED)
                             ? cf_door_numbered_match(e->rp.real, rp->real)
                         : e->scratch ? cf_real_path_inside(rp->real, e->scratch)
                                      : !strcmp(e->rp.real, rp->real); /* not the inode: it
                                                                         * changes with each save */
        if (hit) {
            *index = i;
            return CLFORMER_OK;
        }
    }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is not among the files this run "
                   "declared it writes (a bug in clformer: every output goes through the "
                   "door, docs/RELIABILITY.md)", path);
}

static bool made_here(const cf_door_entry *e, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < e->n_made; i++)
        if (e->made[i].dev == dev && e->made[i].ino == ino) return true;
    return false;
}

bool cf_door_entry_owns(const cf_door_entry *e, const char *real, const struct stat *sb)
{
    return made_here(e, sb->st_dev, sb->st_ino) || (e->owner && e->owner(real, e->owner_user));
}

bool cf_door_may_replace(const clformer_door *d, const cf_door_entry *e, const char *real,
                         const struct stat *sb)
{
    if (e->flags & (CLFORMER_WRITE_REPLACE | CLFORMER_WRITE_APPEND)) return true;
    if (cf_door_entry_owns(e, real, sb)) return true;
    if (e->replaces)
        for (size_t i = 0; i < d->n; i++) {
            const cf_door_entry *in = &d->e[i];
            if (!in->output && !strcmp(in->what, e->replaces) && in->rp.exists &&
                in->rp.dev == sb->st_dev && in->rp.ino == sb->st_ino)
                return true;
        }
    return false;
}

clformer_status cf_door_note_made(cf_door_entry *e, dev_t dev, ino_t ino)
{
    if (made_here(e, dev, ino)) return CLFORMER_OK;
    cf_file_id *grown = realloc(e->made, (e->n_made + 1) * sizeof *grown);
    if (!grown) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    e->made = grown;
    e->made[e->n_made++] = (cf_file_id){dev, ino};
    return CLFORMER_OK;
}

/* --- one public call ------------------------------------------------------------ */

clformer_status cf_door_call_begin(cf_door_call *call, const char *input_what,
                                   const char *const *inputs, size_t n, const char *output_what,
                                   const char *output, unsigned flags)
{
    call->own = NULL;
    if (current) return CLFORMER_OK; /* the caller's door declared them */
    clformer_door *d;
    CF_TRY(clformer_door_create(&d));
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++)
        st = clformer_door_read(d, input_what, inputs[i]);
    /* the caller named the file: it may replace one (a mkstemp name, a
     * file saved before), never an input, a folder or a device */
    if (st == CLFORMER_OK)
        st = clformer_door_write(d, output_what, output, flags | CLFORMER_WRITE_REPLACE);
    if (st == CLFORMER_OK) st = clformer_door_open(d);
    if (st != CLFORMER_OK) {
        clformer_door_free(d);
        return st;
    }
    call->own = d;
    return CLFORMER_OK;
}

void cf_door_call_end(cf_door_call *call)
{
    clformer_door_free(call->own);
    call->own = NULL;
}

clformer_status clformer_path_unused(const char *path, char *buf, size_t cap)
{
    if (!path || !buf || !cap)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_path_unused needs a path and a buffer of at least one byte");
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT) {
        if ((size_t)snprintf(buf, cap, "%s", path) >= cap)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the path '%s' is too long", path);
        return CLFORMER_OK;
    }
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    const int stem = (int)(dot && dot != base ? dot - path : (long)strlen(path));
    const char *ext = path + stem;
    for (int k = 2; k < 100000; k++) {
        if ((size_t)snprintf(buf, cap, "%.*s-%d%s", stem, path, k, ext) >= cap)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the path '%s' is too long", path);
        if (lstat(buf, &sb) != 0 && errno == ENOENT) return CLFORMER_OK;
    }
    return cf_fail(CLFORMER_ERR_IO, "no free name like '%s' (up to -99999)", path);
}
