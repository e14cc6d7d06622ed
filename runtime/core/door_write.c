/*
 * The door's writes (door.h): files written under a temp name beside them
 * and put in place on commit, streams written in place, logs, numbered
 * files removed, folders written whole. Each looks its path up in the
 * current door (door.c) and checks again what is there now.
 */
#include "door_entries.h"
#include "fileio.h"
#include "log.h"
#include "status.h"
#include "temp_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cf_export_dir_names[] = {
    "model.safetensors", "config.json", "vocab.json", "merges.txt", "clformer_vocab.json",
    "clformer_spm.model",
    /* a Hugging Face directory's tokenizer files (tokenizer_hf.h) */
    "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", NULL};

static atomic_uint temp_counter;

char *cf_door_temp_name(const char *real)
{
    char *dir = cf_real_path_dir(real);
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    const size_t size = (dir ? strlen(dir) : 0) + 160;
    char *temp = dir ? malloc(size) : NULL;
    if (temp)
        snprintf(temp, size, "%s%s%.100s.tmp.%ld.%u", dir, strcmp(dir, "/") ? "/" : "", base,
                 (long)getpid(), atomic_fetch_add(&temp_counter, 1));
    free(dir);
    return temp;
}

/* After a rename, the folder entry must reach the disk too. A failure is a
 * warning: the file is complete and in place, only a power cut before the
 * next sync could lose the new name. EINVAL: the filesystem cannot sync
 * folders. */
static void fsync_folder_of(const char *path)
{
    char *dir = cf_real_path_dir(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        cf_log(NULL, CF_LOG_WARN, "wrote '%s' but could not sync its folder (%s): a power cut "
               "now could lose it", path, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
}

/* The temporary is in place as `path`: its folder synced, and no longer a
 * temporary for an abort or the signal handler to remove. */
static void settle_temp(const char *path, int *slot, char **temp_path)
{
    fsync_folder_of(path);
    cf_temp_forget(*slot);
    *slot = -1;
    free(*temp_path);
    *temp_path = NULL;
}

/* The pid of a temp name of `base` ("<base[:100]>.tmp.<pid>.<n>", or an
 * older clformer's "<base>.tmp.<pid>"), or 0 for any other name. */
static long temp_pid(const char *name, const char *base)
{
    const size_t n = strlen(base), kept = n < 100 ? n : 100;
    const char *rest = NULL;
    if (!strncmp(name, base, kept) && !strncmp(name + kept, ".tmp.", 5)) rest = name + kept + 5;
    if (!rest && !strncmp(name, base, n) && !strncmp(name + n, ".tmp.", 5)) rest = name + n + 5;
    if (!rest) return 0;
    const size_t digits = strspn(rest, "0123456789");
    if (digits == 0 || digits > 9) return 0;
    if (rest[digits] == '.') {
        const size_t more = strspn(rest + digits + 1, "0123456789");
        if (more == 0 || rest[digits + 1 + more]) return 0;
    } else if (rest[digits]) {
        return 0;
    }
    return strtol(rest, NULL, 10);
}

/* Removes the temp files of `real` that processes no longer running left
 * (a kill -9 during a save), so they do not pile up. A reused pid keeps its
 * file: at worst one stays until a later save; a live process's temp file
 * is never touched, nor any other name. Best effort. */
static void remove_stale_temps(const char *real)
{
    char *dir = cf_real_path_dir(real);
    const char *slash = strrchr(real, '/');
    const char *base = slash ? slash + 1 : real;
    DIR *folder = dir ? opendir(dir) : NULL;
    for (struct dirent *f; folder && (f = readdir(folder)) != NULL;) {
        const long pid = temp_pid(f->d_name, base);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char stale[8192];
        if ((size_t)snprintf(stale, sizeof stale, "%s/%s", dir, f->d_name) < sizeof stale)
            unlink(stale);
    }
    if (folder) closedir(folder);
    free(dir);
}

/* A temp file beside `real`, recorded for the signal handler. */
static clformer_status open_temp(const char *real, char **temp, int *slot, FILE **fp)
{
    remove_stale_temps(real);
    *temp = cf_door_temp_name(real);
    *fp = NULL;
    if (!*temp) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    CF_TRY(cf_temp_record(*temp, false, slot));
    const int fd = open(*temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!*fp) {
        const int err = errno;
        if (fd >= 0) close(fd);
        unlink(*temp);
        cf_temp_forget(*slot);
        *slot = -1;
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", *temp, strerror(err));
    }
    return CLFORMER_OK;
}

/* --- atomic files ------------------------------------------------------------- */

clformer_status cf_atomic_open(cf_atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    af->slot = -1;
    clformer_door *d = cf_door_current();
    if (!d) { /* a file alone, named by the caller (cf_door_call_begin's rule) */
        CF_TRY(clformer_door_create(&af->own_door));
        clformer_status st = clformer_door_write(af->own_door, "the output", path,
                                                 CLFORMER_WRITE_REPLACE);
        if (st == CLFORMER_OK) st = clformer_door_open(af->own_door);
        if (st != CLFORMER_OK) {
            clformer_door_free(af->own_door);
            af->own_door = NULL;
            return st;
        }
        d = af->own_door;
    }
    af->door = d;
    cf_real_path rp;
    clformer_status st = cf_real_path_of(path, &rp);
    if (st == CLFORMER_OK) st = cf_door_lookup(d, path, &rp, &af->entry);
    if (st != CLFORMER_OK) {
        cf_real_path_free(&rp);
        cf_atomic_abort(af);
        return st;
    }
    cf_door_entry *e = &d->e[af->entry];
    const bool named = (e->flags & CLFORMER_WRITE_STREAM) && cf_door_descriptor_of(path) >= 0;
    if (named || (rp.exists && !S_ISREG(rp.mode))) { /* a stream: written in place */
        int fd = -1;
        st = cf_door_stream_fd(e, path, rp.mode, &fd);
        if (st == CLFORMER_OK && !(af->fp = fdopen(fd, "wb"))) {
            close(fd);
            st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        }
        af->in_place = true;
        af->path = strdup(path);
        cf_real_path_free(&rp);
        if (st == CLFORMER_OK && !af->path) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st != CLFORMER_OK) cf_atomic_abort(af);
        return st;
    }
    struct stat sb;
    if (rp.exists && stat(rp.real, &sb) == 0 && !cf_door_may_replace(d, e, rp.real, &sb))
        st = cf_door_refuse_existing(d, e, path);
    af->path = rp.real; /* taken */
    if (st == CLFORMER_OK) st = open_temp(af->path, &af->temp_path, &af->slot, &af->fp);
    if (st != CLFORMER_OK) cf_atomic_abort(af);
    return st;
}

clformer_status cf_atomic_write(cf_atomic_file *af, const void *data, size_t size)
{
    if (size && fwrite(data, 1, size, af->fp) != size)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s%s",
                       af->in_place ? af->path : af->temp_path, strerror(errno),
                       af->in_place ? "" : " (disk full?)");
    return CLFORMER_OK;
}

clformer_status cf_atomic_patch(cf_atomic_file *af, uint64_t offset, const void *data,
                                size_t size)
{
    const char *p = data;
    if (af->in_place)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': it is not a regular file (a "
                       "device or a FIFO); name a regular file", af->path);
    if (fflush(af->fp) != 0)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s (disk full?)", af->temp_path,
                       strerror(errno));
    while (size > 0) {
        ssize_t put = pwrite(fileno(af->fp), p, size, (off_t)offset);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0)
            return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->temp_path,
                           put < 0 ? strerror(errno) : "no progress");
        p += put;
        size -= (size_t)put;
        offset += (uint64_t)put;
    }
    return CLFORMER_OK;
}

/* A device or FIFO: its writes are checked up to the close; there is no
 * rename, and fsync means nothing there (some devices refuse it). */
static clformer_status commit_in_place(cf_atomic_file *af)
{
    clformer_status st = CLFORMER_OK;
    if (fflush(af->fp) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    if (fclose(af->fp) != 0 && st == CLFORMER_OK)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    af->fp = NULL;
    cf_atomic_abort(af);
    return st;
}

/* Puts the complete temp file in place: renamed over a file the run may
 * replace; linked where nothing is (link fails if a file appeared meanwhile,
 * which is then left as it is), or renamed where the filesystem has no links. */
static clformer_status put_in_place(cf_atomic_file *af, const struct stat *written)
{
    cf_door_entry *e = &af->door->e[af->entry];
    struct stat sb;
    if (lstat(af->path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode) || !cf_door_may_replace(af->door, e, af->path, &sb))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: '%s' appeared while it was "
                           "being written; it was left as it is", e->what, af->path);
        if (rename(af->temp_path, af->path) != 0)
            return cf_fail(CLFORMER_ERR_IO, "cannot rename '%s' to '%s': %s", af->temp_path,
                           af->path, strerror(errno));
    } else if (link(af->temp_path, af->path) == 0) {
        unlink(af->temp_path);
    } else if (errno == EEXIST) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: '%s' appeared while it was being "
                       "written; it was left as it is", e->what, af->path);
    } else if (errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP || errno == EMLINK ||
               errno == ENOSYS || errno == EXDEV) {
        if (rename(af->temp_path, af->path) != 0)
            return cf_fail(CLFORMER_ERR_IO, "cannot rename '%s' to '%s': %s", af->temp_path,
                           af->path, strerror(errno));
    } else {
        return cf_fail(CLFORMER_ERR_IO, "cannot put '%s' in place: %s", af->path,
                       strerror(errno));
    }
    CF_TRY(cf_door_note_made(e, written->st_dev, written->st_ino));
    if (e->scratch && e->n_scratch < sizeof e->scratch_slots / sizeof *e->scratch_slots)
        /* inside a folder being written: removed with it on a signal */
        return cf_temp_record(af->path, false, &e->scratch_slots[e->n_scratch++]);
    return CLFORMER_OK;
}

clformer_status cf_atomic_commit(cf_atomic_file *af)
{
    if (af->in_place) return commit_in_place(af);
    clformer_status st = CLFORMER_OK;
    struct stat written;
    if (fflush(af->fp) != 0 || fsync(fileno(af->fp)) != 0 || fstat(fileno(af->fp), &written) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s (disk full?)", af->temp_path,
                     strerror(errno));
    if (fclose(af->fp) != 0 && st == CLFORMER_OK)
        st = cf_fail(CLFORMER_ERR_IO, "cannot close '%s': %s", af->temp_path, strerror(errno));
    af->fp = NULL;
    if (st == CLFORMER_OK) st = put_in_place(af, &written);
    if (st == CLFORMER_OK) settle_temp(af->path, &af->slot, &af->temp_path);
    cf_atomic_abort(af);
    return st;
}

void cf_atomic_abort(cf_atomic_file *af)
{
    if (af->fp) fclose(af->fp);
    if (af->temp_path) unlink(af->temp_path);
    cf_temp_forget(af->slot);
    free(af->temp_path);
    free(af->path);
    clformer_door_free(af->own_door);
    memset(af, 0, sizeof *af);
    af->slot = -1;
}

clformer_status cf_write_file_atomic(const char *path, const void *data, size_t size)
{
    cf_atomic_file af;
    CF_TRY(cf_atomic_open(&af, path));
    clformer_status st = cf_atomic_write(&af, data, size);
    if (st != CLFORMER_OK) {
        cf_atomic_abort(&af);
        return st;
    }
    return cf_atomic_commit(&af);
}

/* --- streams and logs ----------------------------------------------------------- */

clformer_status cf_door_stream_open(const char *path, FILE **fp)
{
    *fp = NULL;
    clformer_door *d = cf_door_current();
    if (!d)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is written outside a door (a bug "
                       "in clformer)", path);
    cf_real_path rp;
    size_t i;
    clformer_status st = cf_real_path_of(path, &rp);
    if (st == CLFORMER_OK) st = cf_door_lookup(d, path, &rp, &i);
    if (st != CLFORMER_OK) {
        cf_real_path_free(&rp);
        return st;
    }
    cf_door_entry *e = &d->e[i];
    int fd = -1;
    struct stat sb;
    if (((e->flags & CLFORMER_WRITE_STREAM) && cf_door_descriptor_of(path) >= 0) ||
        (rp.exists && !S_ISREG(rp.mode))) {
        st = cf_door_stream_fd(e, path, rp.mode, &fd);
    } else if (rp.exists && stat(rp.real, &sb) == 0) {
        if (!cf_door_may_replace(d, e, rp.real, &sb)) st = cf_door_refuse_existing(d, e, path);
        else if ((fd = open(rp.real, O_WRONLY | O_CLOEXEC |
                            ((e->flags & CLFORMER_WRITE_REPLACE) &&
                                     !(e->flags & CLFORMER_WRITE_APPEND)
                                 ? O_TRUNC
                                 : O_APPEND))) < 0)
            st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    } else if ((fd = open(rp.real, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0) {
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    struct stat made;
    if (st == CLFORMER_OK && fstat(fd, &made) == 0 && S_ISREG(made.st_mode))
        st = cf_door_note_made(e, made.st_dev, made.st_ino);
    if (st == CLFORMER_OK && !(*fp = fdopen(fd, "a")))
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    if (st != CLFORMER_OK && fd >= 0) close(fd);
    cf_real_path_free(&rp);
    return st;
}

/* --- numbered files ------------------------------------------------------------- */

/* CLFORMER_OK when the regular file `path` matches a numbered output and
 * is the run's own; else a refusal. */
static clformer_status own_numbered(const char *path)
{
    clformer_door *d = cf_door_current();
    if (!d)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "removing '%s' outside a door (a bug "
                       "in clformer)", path);
    cf_real_path rp;
    size_t i;
    clformer_status st = cf_real_path_of(path, &rp);
    if (st == CLFORMER_OK) st = cf_door_lookup(d, path, &rp, &i);
    const cf_door_entry *e = st == CLFORMER_OK ? &d->e[i] : NULL;
    struct stat sb;
    if (st == CLFORMER_OK && (!(e->flags & CF_WRITE_NUMBERED) || lstat(rp.real, &sb) != 0 ||
                              !S_ISREG(sb.st_mode) ||
                              !cf_door_entry_owns(e, rp.real, &sb)))
        st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is not this run's: it stays", path);
    cf_real_path_free(&rp);
    return st;
}

clformer_status cf_door_remove(const char *path)
{
    CF_TRY(own_numbered(path));
    if (unlink(path) != 0 && errno != ENOENT)
        return cf_fail(CLFORMER_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
    return CLFORMER_OK;
}

bool cf_door_owns(const char *path)
{
    const bool own = own_numbered(path) == CLFORMER_OK;
    cf_clear_error();
    return own;
}

/* --- a folder written whole ------------------------------------------------------- */

clformer_status cf_dir_output_begin(cf_dir_output *dout, const char *path)
{
    memset(dout, 0, sizeof *dout);
    dout->slot = -1;
    clformer_door *d = cf_door_current();
    if (!d)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the folder '%s' is written outside a "
                       "door (a bug in clformer)", path);
    cf_real_path rp;
    clformer_status st = cf_real_path_of(path, &rp);
    if (st == CLFORMER_OK) st = cf_door_lookup(d, path, &rp, &dout->entry);
    cf_door_entry *e = st == CLFORMER_OK ? &d->e[dout->entry] : NULL;
    if (st == CLFORMER_OK && (!(e->flags & CLFORMER_WRITE_DIRECTORY) || e->scratch))
        st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is not a folder this run writes now "
                     "(a bug in clformer)", path);
    dout->door = d;
    dout->path = rp.real; /* taken */
    char *parent = st == CLFORMER_OK ? cf_real_path_dir(dout->path) : NULL;
    if (st == CLFORMER_OK) st = parent ? cf_make_dirs(parent)
                                       : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    free(parent);
    if (st == CLFORMER_OK && !(dout->temp_path = cf_door_temp_name(dout->path)))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK) st = cf_temp_record(dout->temp_path, true, &dout->slot);
    if (st == CLFORMER_OK && mkdir(dout->temp_path, 0777) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "%s: cannot make the folder '%s': %s", e->what,
                     dout->temp_path, strerror(errno));
    if (st == CLFORMER_OK && !(e->scratch = strdup(dout->temp_path)))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st != CLFORMER_OK) cf_dir_output_abort(dout);
    return st;
}

clformer_status cf_dir_output_file(const cf_dir_output *dout, const char *name, char *buf,
                                   size_t cap)
{
    if ((size_t)snprintf(buf, cap, "%s/%s", dout->temp_path, name) >= cap)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the folder path '%s' is too long",
                       dout->path);
    return CLFORMER_OK;
}

/* Removes the files of `names` in folder `dir`, then the folder (which
 * holds nothing else: the door checked). */
static void remove_folder(const char *dir, const char *const *names)
{
    char path[8192];
    for (size_t i = 0; names[i]; i++)
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) < sizeof path)
            unlink(path);
    if (rmdir(dir) != 0)
        cf_log(NULL, CF_LOG_WARN, "could not remove the folder '%s' (%s): remove it by hand",
               dir, strerror(errno));
}

/* Puts the written folder at dout->path in place of the earlier export
 * there: two renames with signals held back between them, so the name is
 * never left empty; then the earlier files go. */
static clformer_status swap_in(cf_dir_output *dout, const cf_door_entry *e)
{
    char *old = cf_door_temp_name(dout->path);
    if (!old) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    sigset_t hold, was;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    sigprocmask(SIG_BLOCK, &hold, &was);
    clformer_status st = CLFORMER_OK;
    if (rename(dout->path, old) != 0) {
        st = cf_fail(CLFORMER_ERR_IO, "%s: cannot move the earlier '%s' aside: %s", e->what,
                     dout->path, strerror(errno));
    } else if (rename(dout->temp_path, dout->path) != 0) {
        st = cf_fail(CLFORMER_ERR_IO, "%s: cannot put '%s' in place: %s", e->what, dout->path,
                     strerror(errno));
        rename(old, dout->path); /* the earlier one back */
    }
    sigprocmask(SIG_SETMASK, &was, NULL);
    if (st == CLFORMER_OK) remove_folder(old, cf_export_dir_names);
    free(old);
    return st;
}

clformer_status cf_dir_output_commit(cf_dir_output *dout)
{
    cf_door_entry *e = &dout->door->e[dout->entry];
    clformer_status st = CLFORMER_OK;
    const int fd = open(dout->temp_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    struct stat sb;
    if (lstat(dout->path, &sb) != 0) {
        if (rename(dout->temp_path, dout->path) != 0)
            st = cf_fail(CLFORMER_ERR_IO, "%s: cannot put '%s' in place: %s", e->what,
                         dout->path, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        st = cf_door_refuse_kind(e, dout->path, sb.st_mode);
    } else {
        DIR *folder = opendir(dout->path);
        bool empty = true, known = true;
        for (struct dirent *f; folder && (f = readdir(folder)) != NULL;) {
            if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, "..")) continue;
            empty = false;
            bool listed = false;
            for (size_t k = 0; cf_export_dir_names[k] && !listed; k++)
                listed = !strcmp(cf_export_dir_names[k], f->d_name);
            known &= listed;
        }
        if (folder) closedir(folder);
        if (empty) { /* rename replaces an empty folder */
            if (rename(dout->temp_path, dout->path) != 0)
                st = cf_fail(CLFORMER_ERR_IO, "%s: cannot put '%s' in place: %s", e->what,
                             dout->path, strerror(errno));
        } else if (!known || !cf_door_may_replace(dout->door, e, dout->path, &sb)) {
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: files appeared in '%s' while it "
                         "was being written; it was left as it is", e->what, dout->path);
        } else {
            st = swap_in(dout, e);
        }
    }
    if (st == CLFORMER_OK && stat(dout->path, &sb) == 0)
        st = cf_door_note_made(e, sb.st_dev, sb.st_ino);
    if (st == CLFORMER_OK) {
        for (size_t i = 0; i < e->n_scratch; i++) cf_temp_forget(e->scratch_slots[i]);
        e->n_scratch = 0;
        settle_temp(dout->path, &dout->slot, &dout->temp_path);
    }
    cf_dir_output_abort(dout);
    return st;
}

void cf_dir_output_abort(cf_dir_output *dout)
{
    if (dout->temp_path) { /* the fresh folder holds only what this run wrote */
        DIR *folder = opendir(dout->temp_path);
        char path[8192];
        for (struct dirent *f; folder && (f = readdir(folder)) != NULL;)
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..") &&
                (size_t)snprintf(path, sizeof path, "%s/%s", dout->temp_path, f->d_name) <
                    sizeof path)
                unlink(path);
        if (folder) closedir(folder);
        rmdir(dout->temp_path);
    }
    if (dout->door && dout->entry < dout->door->n) {
        cf_door_entry *e = &dout->door->e[dout->entry];
        for (size_t i = 0; i < e->n_scratch; i++) cf_temp_forget(e->scratch_slots[i]);
        e->n_scratch = 0;
        free(e->scratch);
        e->scratch = NULL;
    }
    cf_temp_forget(dout->slot);
    free(dout->temp_path);
    free(dout->path);
    memset(dout, 0, sizeof *dout);
    dout->slot = -1;
}

/* --- the library's own files ------------------------------------------------------ */

clformer_status cf_write_cache_file(const char *path, const void *data, size_t size)
{
    char *temp;
    int slot;
    FILE *fp;
    CF_TRY(open_temp(path, &temp, &slot, &fp));
    clformer_status st = CLFORMER_OK;
    if ((size && fwrite(data, 1, size, fp) != size) || fflush(fp) != 0 || fsync(fileno(fp)) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", temp, strerror(errno));
    if (fclose(fp) != 0 && st == CLFORMER_OK)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", temp, strerror(errno));
    if (st == CLFORMER_OK && rename(temp, path) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot rename '%s' to '%s': %s", temp, path,
                     strerror(errno));
    if (st != CLFORMER_OK) unlink(temp);
    cf_temp_forget(slot);
    free(temp);
    return st;
}
