/* A training run's files (see checkpoint_files.h). */
#include "checkpoint_files.h"
#include "door.h"
#include "safetensors.h"
#include "splitmix.h"
#include "status.h"
#include "trainer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char suffix[] = ".safetensors";

/* The length of save_path less a ".safetensors" ending. */
static size_t stem_length(const char *save_path)
{
    const size_t n = strlen(save_path), k = sizeof suffix - 1;
    return n > k && !strcmp(save_path + n - k, suffix) ? n - k : n;
}

clformer_status cf_checkpoint_name(const char *save_path, const char *kind, uint64_t step,
                                   char *buf, size_t size)
{
    const int stem = (int)stem_length(save_path);
    const int n = !strcmp(kind, "best")    ? snprintf(buf, size, "%.*s.best%s", stem, save_path, suffix)
                  : !strcmp(kind, "step*") ? snprintf(buf, size, "%.*s.step*%s", stem, save_path, suffix)
                                           : snprintf(buf, size, "%.*s.%s%" PRIu64 "%s", stem,
                                                      save_path, kind, step, suffix);
    if (n < 0 || (size_t)n >= size)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the checkpoint path '%s' is too long",
                       save_path);
    return CLFORMER_OK;
}

typedef struct {
    uint64_t step;
    char *path;
} numbered;

static int by_step(const void *a, const void *b)
{
    const numbered *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step;
}

/* The step of "<base>.step<digits>.safetensors", or false for any other name. */
static bool numbered_step(const char *name, const char *base, size_t base_len, uint64_t *step)
{
    static const char mark[] = ".step";
    if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, mark, 5) != 0) return false;
    const char *digits = name + base_len + 5, *p = digits;
    uint64_t s = 0;
    while (*p >= '0' && *p <= '9') {
        if (s > (UINT64_MAX - 9) / 10) return false;
        s = s * 10 + (uint64_t)(*p++ - '0');
    }
    if (p == digits || strcmp(p, suffix) != 0) return false;
    *step = s;
    return true;
}

clformer_status cf_checkpoints_prune(const char *save_path, uint64_t keep)
{
    /* split the stem into directory and file name */
    const size_t stem = stem_length(save_path);
    const char *slash = strrchr(save_path, '/'); /* the ending has none */
    char dir[4096];
    const char *base = slash ? slash + 1 : save_path;
    const size_t base_len = stem - (size_t)(base - save_path);
    if (slash) {
        const size_t dlen = slash == save_path ? 1 : (size_t)(slash - save_path);
        if (dlen >= sizeof dir)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the path '%s' is too long", save_path);
        memcpy(dir, save_path, dlen);
        dir[dlen] = '\0';
    } else {
        strcpy(dir, ".");
    }
    DIR *d = opendir(dir);
    if (!d)
        return cf_fail(CLFORMER_ERR_IO, "cannot list '%s' to remove old checkpoints: %s", dir,
                       strerror(errno));
    numbered *list = NULL;
    size_t n = 0, cap = 0;
    clformer_status st = CLFORMER_OK;
    for (struct dirent *e; st == CLFORMER_OK && (e = readdir(d)) != NULL;) {
        uint64_t step;
        if (!numbered_step(e->d_name, base, base_len, &step)) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!cf_door_owns(path)) continue; /* not this run's: never removed */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            numbered *grown = realloc(list, cap * sizeof *list);
            if (!grown) {
                st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
                break;
            }
            list = grown;
        }
        list[n].step = step;
        list[n].path = strdup(path);
        if (!list[n++].path) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    closedir(d);
    if (st == CLFORMER_OK && n > keep) {
        qsort(list, n, sizeof *list, by_step);
        for (size_t i = 0; i < n - keep && st == CLFORMER_OK; i++)
            st = cf_door_remove(list[i].path);
    }
    for (size_t i = 0; i < n; i++) free(list[i].path);
    free(list);
    return st;
}

void cf_run_id_new(char buf[17])
{
    uint64_t id = 0;
    const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    const bool random = fd >= 0 && read(fd, &id, sizeof id) == (ssize_t)sizeof id;
    if (fd >= 0) close(fd);
    if (!random) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t s = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf;
        id = cf_splitmix64(&s);
    }
    snprintf(buf, 17, "%016" PRIx64, id);
}

/* --- the run's files ------------------------------------------------------------ */

/* Whether a checkpoint at `path` belongs to the run `run` (its clformer.run). */
static bool run_owns(const char *path, void *run)
{
    cf_st_reader *r = NULL;
    bool own = false;
    if (cf_st_open(path, &r) == CLFORMER_OK) {
        const char *id = cf_st_metadata(r, "clformer.run");
        own = id && !strcmp(id, run);
    }
    cf_st_close(r);
    cf_clear_error();
    return own;
}

/* The run id a resumed checkpoint carries, malloc'd ("" for none). */
static char *resumed_run(const char *resume_path)
{
    cf_st_reader *r = NULL;
    const char *id = NULL;
    if (resume_path && cf_st_open(resume_path, &r) == CLFORMER_OK)
        id = cf_st_metadata(r, "clformer.run");
    char *copy = strdup(id && strlen(id) == 16 ? id : "");
    cf_st_close(r);
    cf_clear_error();
    return copy;
}

/* One checkpoint output of the run, owned by the resumed run's files. */
static clformer_status checkpoint_output(clformer_door *door, const char *what,
                                         const char *path, unsigned flags, const char *replaces,
                                         const char *run)
{
    char *owner = run[0] ? strdup(run) : NULL;
    const cf_door_output_spec spec = {flags, replaces, owner ? run_owns : NULL, owner};
    return cf_door_output(door, what, path, &spec);
}

clformer_status clformer_train_files(clformer_door *door, const clformer_train_options *o)
{
    CF_TRY(CF_CHECK_SIZE(clformer_train_options, o));
    const char *const reads[][2] = {
        {"--src", o->src_path},       {"--tgt", o->tgt_path},
        {"--val-src", o->val_src_path}, {"--val-tgt", o->val_tgt_path},
        {"--init", o->init_path},     {"--resume", o->resume_path},
        {"--text", o->text_path},     {"--val-text", o->val_text_path},
        {"--bpe-vocab", o->bpe_vocab_path}, {"--bpe-merges", o->bpe_merges_path}};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
        CF_TRY(clformer_door_read(door, reads[i][0], reads[i][1]));
    /* only rank 0 writes */
    if (o->collective && o->collective->size > 1 && o->collective->rank != 0) return CLFORMER_OK;
    char *run = resumed_run(o->resume_path);
    if (!run) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const unsigned replace = o->overwrite ? CLFORMER_WRITE_REPLACE : 0;
    clformer_status st = checkpoint_output(door, "--save", o->save_path,
                                           CLFORMER_WRITE_LOCKED | replace, "--resume", run);
    if (st == CLFORMER_OK && o->stop_save_path &&
        (!o->save_path || strcmp(o->stop_save_path, o->save_path)))
        st = checkpoint_output(door, "the interrupted run's checkpoint", o->stop_save_path,
                               replace, "--resume", run);
    if (st == CLFORMER_OK)
        st = clformer_door_write(door, "--log", o->log_path,
                                 CLFORMER_WRITE_STREAM | replace |
                                     (o->resume_path ? CLFORMER_WRITE_APPEND : 0));
    char name[4096];
    if (st == CLFORMER_OK && o->keep_last && o->save_path) {
        st = cf_checkpoint_name(o->save_path, "step*", 0, name, sizeof name);
        if (st == CLFORMER_OK)
            st = checkpoint_output(door, "--keep-last", name, CF_WRITE_NUMBERED | replace, NULL,
                                   run);
    }
    if (st == CLFORMER_OK && o->save_best && o->save_path) {
        st = cf_checkpoint_name(o->save_path, "best", 0, name, sizeof name);
        if (st == CLFORMER_OK) st = checkpoint_output(door, "--save-best", name, replace, NULL, run);
    }
    free(run);
    return st;
}
