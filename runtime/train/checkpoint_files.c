/* Numbered and best checkpoints beside a run's checkpoint (see checkpoint_files.h). */
#include "checkpoint_files.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    const int n = strcmp(kind, "best") == 0
                      ? snprintf(buf, size, "%.*s.best%s", stem, save_path, suffix)
                      : snprintf(buf, size, "%.*s.%s%" PRIu64 "%s", stem, save_path, kind, step,
                                 suffix);
    if (n < 0 || (size_t)n >= size)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the checkpoint path '%s' is too long",
                       save_path);
    return CLFORMER_OK;
}

typedef struct {
    uint64_t step;
    char *name;
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
        list[n].name = strdup(e->d_name);
        if (!list[n++].name) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    closedir(d);
    if (st == CLFORMER_OK && n > keep) {
        qsort(list, n, sizeof *list, by_step);
        for (size_t i = 0; i < n - keep && st == CLFORMER_OK; i++) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, list[i].name);
            if (unlink(path) != 0 && errno != ENOENT)
                st = cf_fail(CLFORMER_ERR_IO, "cannot remove the old checkpoint '%s': %s", path,
                             strerror(errno));
        }
    }
    for (size_t i = 0; i < n; i++) free(list[i].name);
    free(list);
    return st;
}
