/*
 * The OpenCL devices the project's set-up installs, made visible to the ICD
 * loader without the user setting anything.
 *
 * tools/install-deps.sh installs Oclgrind (Debian ships no ICD file for it)
 * and Intel's CPU runtime in a venv under ~/.cache/clformer (never in
 * /etc/OpenCL/vendors). The ICD loader (ocl-icd) reads one directory of .icd
 * files, /etc/OpenCL/vendors or $OCL_ICD_VENDORS, when the process makes its
 * first OpenCL call. So before that call, when OCL_ICD_VENDORS is unset, the
 * runtime writes a directory holding the system's .icd files plus one for
 * each installed extra, and points OCL_ICD_VENDORS at it. The directory is
 * made afresh from the system's files whenever they change (its name is a
 * hash of its contents), so a driver installed later is seen at once. A
 * user's OCL_ICD_VENDORS is left alone, and so is anything that fails here
 * (the loader then sees the system's devices, and a warning says why).
 */
#include "context.h"
#include "fileio.h"
#include "fnv1a.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <threads.h>
#include <unistd.h>

enum { MAX_ICDS = 64, ICD_LINE = 1024 };

typedef struct {
    char name[256];          /* the .icd file's name */
    char library[ICD_LINE];  /* its first line: the library the loader opens */
} icd_entry;

typedef struct {
    icd_entry e[MAX_ICDS];
    size_t n;
} icd_list;

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The first line of an .icd file, trimmed; false when unreadable or empty. */
static bool read_icd(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    if (!ok) return false;
    size_t n = strcspn(out, "\r\n");
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t')) n--;
    out[n] = '\0';
    return n > 0;
}

static bool has_library(const icd_list *l, const char *library)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->e[i].library, library)) return true;
    return false;
}

static void add(icd_list *l, const char *name, const char *library)
{
    if (l->n == MAX_ICDS || has_library(l, library)) return;
    snprintf(l->e[l->n].name, sizeof l->e[l->n].name, "%s", name);
    /* a library path longer than an .icd line cannot be kept: left out */
    if (strlen(library) >= sizeof l->e[l->n].library) return;
    memcpy(l->e[l->n].library, library, strlen(library) + 1);
    l->n++;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const icd_entry *)a)->name, ((const icd_entry *)b)->name);
}

/* The .icd files of the system's vendor directory, sorted by name. */
static void system_icds(const char *dir, icd_list *l)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".icd") || de->d_name[0] == '.') continue;
        char path[4096], library[ICD_LINE];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
        if (read_icd(path, library, sizeof library)) add(l, de->d_name, library);
    }
    closedir(d);
    qsort(l->e, l->n, sizeof l->e[0], by_name);
}

/* Writes the list's .icd files into a new directory and renames it to
 * `dir`; another process that got there first wins, with the same files. */
static clformer_status write_dir(const char *parent, const char *dir, const icd_list *l)
{
    CF_TRY(cf_make_dirs(parent));
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", parent) >= (int)sizeof tmp || !mkdtemp(tmp))
        return cf_fail(CLFORMER_ERR_IO, "cannot create a directory in '%s': %s", parent,
                       strerror(errno));
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < l->n && st == CLFORMER_OK; i++) {
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", tmp, l->e[i].name);
        FILE *f = fopen(path, "w");
        if (!f || fprintf(f, "%s\n", l->e[i].library) < 0)
            st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        if (f && fclose(f) != 0 && st == CLFORMER_OK)
            st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    if (st == CLFORMER_OK && rename(tmp, dir) == 0) return CLFORMER_OK;
    if (st == CLFORMER_OK && !exists(dir))
        st = cf_fail(CLFORMER_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
    for (size_t i = 0; i < l->n; i++) {
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", tmp, l->e[i].name);
        unlink(path);
    }
    rmdir(tmp);
    return st;
}

static void add_project_icds(void)
{
    cf_icd_env env;
    if (!cf_icd_env_read(&env) || env.user_vendors) return;
    icd_list *l = calloc(1, sizeof *l);
    if (!l) return;
    system_icds(env.system_dir, l);
    size_t n_system = l->n;
#ifdef CLFORMER_OCLGRIND_ICD
    if (exists(CLFORMER_OCLGRIND_ICD)) add(l, "clformer-oclgrind.icd", CLFORMER_OCLGRIND_ICD);
#endif
    /* Intel's runtime as tools/intel-opencl.sh leaves it: the stamp is
     * written last, so a half-done install is not taken */
    char stamp[4096 + 32], library[4096 + 32];
    for (size_t i = 0; i < env.n_intel_dirs; i++) {
        snprintf(stamp, sizeof stamp, "%s/clformer-stamp", env.intel_dirs[i]);
        snprintf(library, sizeof library, "%s/lib/libintelocl.so", env.intel_dirs[i]);
        if (exists(stamp) && exists(library)) {
            add(l, "clformer-intel-cpu.icd", library);
            break;
        }
    }
    if (l->n > n_system) {
        uint64_t h = CF_FNV1A_INIT;
        for (size_t i = 0; i < l->n; i++) {
            h = cf_fnv1a(h, l->e[i].name, strlen(l->e[i].name) + 1);
            h = cf_fnv1a(h, l->e[i].library, strlen(l->e[i].library) + 1);
        }
        char parent[4096 + 8], dir[4096 + 32];
        snprintf(parent, sizeof parent, "%s/icd", env.cache_dir);
        snprintf(dir, sizeof dir, "%s/%016llx", parent, (unsigned long long)h);
        clformer_status st = exists(dir) ? CLFORMER_OK : write_dir(parent, dir, l);
        if (st == CLFORMER_OK)
            setenv("OCL_ICD_VENDORS", dir, 0);
        else
            cf_log(NULL, CF_LOG_WARN, "only the system's OpenCL devices are listed (%s); "
                   "OCL_ICD_VENDORS=DIR names a directory of .icd files instead",
                   clformer_last_error());
    }
    free(l);
}

void cf_icd_add_project_vendors(void)
{
    static once_flag once = ONCE_FLAG_INIT;
    call_once(&once, add_project_icds);
}
