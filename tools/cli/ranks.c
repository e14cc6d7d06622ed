/*
 * The ranks of a data-parallel job (ranks.h) and the MPI implementation of
 * clformer_collective. Compiled with CLFORMER_HAVE_MPI when CMake found MPI;
 * without it a single rank, and a job launched as several ranks is told how
 * to get MPI.
 */
#include "ranks.h"
#include "cli.h"
#include "context_open.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CLFORMER_HAVE_MPI
#include <mpi.h>
#endif

static ranks_info info = {0, 1, 0, 1, false};

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

void ranks_init(int *argc, char ***argv)
{
    info.launched = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
    info.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", 0));
#ifdef CLFORMER_HAVE_MPI
    if (info.launched <= 1 && !getenv("PMIX_RANK")) return;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "clformer: error: MPI_Init failed\n");
        exit(1);
    }
    info.mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &info.size);
    /* the rank among those sharing this machine's memory: MPI-3's split */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &info.local_rank);
    MPI_Comm_free(&node);
#else
    (void)argc;
    (void)argv;
#endif
}

void ranks_finalize(void)
{
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi) MPI_Finalize();
#endif
}

const ranks_info *ranks_get(void) { return &info; }

int ranks_require(const char *command)
{
    if (info.launched <= 1 || info.mpi) return 0;
    if (info.local_rank == 0)
        cli_error(command, "launched as %d ranks, but this clformer was built without MPI: "
                           "install it (apt-get install libopenmpi-dev openmpi-bin), rebuild "
                           "(tools/build.sh) and run mpirun again",
                  info.launched);
    return 1;
}

_Noreturn void ranks_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi && info.size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}

#ifdef CLFORMER_HAVE_MPI
/* Gradient buckets: several non-blocking all-reduces in flight at once, so
 * the network carries one bucket while MPI reduces another. */
enum { BUCKET = 1 << 22, MAX_BUCKETS = 64 };

static clformer_status mpi_failed(int err, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    fprintf(stderr, "clformer: error: rank %d: %s failed: %s\n", info.rank, call, msg);
    return CLFORMER_ERR_IO;
}

static clformer_status allreduce(void *data, size_t n, size_t elem, MPI_Datatype type)
{
    MPI_Request req[MAX_BUCKETS];
    char *p = data;
    while (n > 0) {
        int k = 0;
        for (; k < MAX_BUCKETS && n > 0; k++) {
            size_t part = n < BUCKET ? n : BUCKET;
            int err = MPI_Iallreduce(MPI_IN_PLACE, p, (int)part, type, MPI_SUM, MPI_COMM_WORLD,
                                     &req[k]);
            if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Iallreduce");
            p += part * elem;
            n -= part;
        }
        int err = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Waitall");
    }
    return CLFORMER_OK;
}

static clformer_status sum_f32(void *user, float *data, size_t n)
{
    (void)user;
    return allreduce(data, n, sizeof *data, MPI_FLOAT);
}

static clformer_status sum_f64(void *user, double *data, size_t n)
{
    (void)user;
    return allreduce(data, n, sizeof *data, MPI_DOUBLE);
}

/* The non-blocking sum the model starts for each gradient bucket as soon as
 * backward has written it (a bucket is at most 4M floats, within int). */
static clformer_status sum_start_f32(void *user, float *data, size_t n, void **request)
{
    (void)user;
    MPI_Request *req = malloc(sizeof *req);
    if (!req) return CLFORMER_ERR_OUT_OF_MEMORY;
    int err = MPI_Iallreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
    if (err != MPI_SUCCESS) {
        free(req);
        return mpi_failed(err, "MPI_Iallreduce");
    }
    *request = req;
    return CLFORMER_OK;
}

static clformer_status sum_test(void *user, void *request, int *done)
{
    (void)user;
    int err = MPI_Test(request, done, MPI_STATUS_IGNORE);
    return err == MPI_SUCCESS ? CLFORMER_OK : mpi_failed(err, "MPI_Test");
}

static clformer_status sum_wait(void *user, void *request)
{
    (void)user;
    int err = MPI_Wait(request, MPI_STATUS_IGNORE);
    free(request);
    return err == MPI_SUCCESS ? CLFORMER_OK : mpi_failed(err, "MPI_Wait");
}

static clformer_status broadcast(void *user, void *data, size_t bytes, int root)
{
    (void)user;
    char *p = data;
    while (bytes > 0) {
        size_t part = bytes < ((size_t)1 << 30) ? bytes : ((size_t)1 << 30);
        int err = MPI_Bcast(p, (int)part, MPI_BYTE, root, MPI_COMM_WORLD);
        if (err != MPI_SUCCESS) return mpi_failed(err, "MPI_Bcast");
        p += part;
        bytes -= part;
    }
    return CLFORMER_OK;
}
#endif

void ranks_collective(clformer_collective *c)
{
    memset(c, 0, sizeof *c);
    c->rank = info.rank;
    c->size = info.size;
#ifdef CLFORMER_HAVE_MPI
    c->allreduce_sum_f32 = sum_f32;
    c->allreduce_sum_f64 = sum_f64;
    c->broadcast = broadcast;
    c->allreduce_start_f32 = sum_start_f32;
    c->test = sum_test;
    c->wait = sum_wait;
#endif
}

bool ranks_any(bool flag)
{
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi && info.size > 1) {
        int in = flag, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        return out != 0;
    }
#endif
    return flag;
}

clformer_status ranks_context_create(clformer_context **ctx)
{
    if (info.size <= 1) return cli_context_create(NULL, ctx);
    const char *selector = getenv("CLFORMER_DEVICE");
    clformer_device_info *devs = NULL;
    size_t n = 0, chosen = 0;
    clformer_status st = clformer_list_devices(&devs, &n);
    if (st == CLFORMER_OK)
        st = clformer_select_device_for_rank(devs, n, selector, info.local_rank, &chosen, NULL);
    char pair[32] = "";
    if (st == CLFORMER_OK) snprintf(pair, sizeof pair, "%s", devs[chosen].selector);
    clformer_free(devs);
    return st == CLFORMER_OK ? cli_context_create(pair, ctx) : st;
}

void ranks_allgather_u64(const uint64_t *mine, size_t n, uint64_t *all)
{
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi && info.size > 1) {
        MPI_Allgather(mine, (int)n, MPI_UINT64_T, all, (int)n, MPI_UINT64_T, MPI_COMM_WORLD);
        return;
    }
#endif
    memcpy(all, mine, n * sizeof *mine);
}

void ranks_barrier(void)
{
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi && info.size > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void ranks_print_in_order(const char *line)
{
#ifdef CLFORMER_HAVE_MPI
    if (info.mpi && info.size > 1) {
        enum { WIDTH = 512 };
        char mine[WIDTH] = "";
        snprintf(mine, sizeof mine, "%s", line);
        char *all = info.rank == 0 ? malloc((size_t)info.size * WIDTH) : NULL;
        MPI_Gather(mine, WIDTH, MPI_CHAR, all, WIDTH, MPI_CHAR, 0, MPI_COMM_WORLD);
        for (int r = 0; all && r < info.size; r++) printf("%s\n", all + (size_t)r * WIDTH);
        free(all);
        fflush(stdout);
        return;
    }
#endif
    printf("%s\n", line);
}
