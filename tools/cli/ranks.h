/*
 * The ranks of a data-parallel `clformer` job (tools/cli/ranks.c): started
 * with MPI when the process was launched by mpirun and the tool was built
 * with MPI; one rank otherwise.
 */
#ifndef CLFORMER_RANKS_H
#define CLFORMER_RANKS_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int rank, size;  /* in the job */
    int local_rank;  /* among the ranks on this machine: picks the device */
    int launched;    /* ranks the launcher announced (OMPI_COMM_WORLD_SIZE, PMI_SIZE) */
    bool mpi;        /* MPI is running */
} ranks_info;

/* Starts MPI when launched as several ranks (main calls it first). */
void ranks_init(int *argc, char ***argv);
/* Ends MPI after a normal return, so every rank leaves together. */
void ranks_finalize(void);
const ranks_info *ranks_get(void);

/* 0 when this process can serve as the job's rank; otherwise prints why
 * (launched as several ranks by a clformer built without MPI) and returns 1. */
int ranks_require(const char *command);

/* The MPI collectives for clformer_model_set_collective (size 1 when alone). */
void ranks_collective(clformer_collective *c);

/* Ends the whole job from this rank after it printed its error: MPI_Abort
 * when there are other ranks (so none waits forever), else exit. */
_Noreturn void ranks_abort(int code);

/* True on every rank when `flag` is true on any (Ctrl-C seen by one rank). */
bool ranks_any(bool flag);

/* This rank's device: CLFORMER_DEVICE's (local rank mod matches)-th match
 * under mpirun (clformer_select_device_for_rank), else its one choice. */
clformer_status ranks_context_create(clformer_context **ctx);

/* Every rank's `n` values, rank after rank, into `all` (size * n values). */
void ranks_allgather_u64(const uint64_t *mine, size_t n, uint64_t *all);
/* Waits for every rank (nothing alone). */
void ranks_barrier(void);

/* Rank 0 prints every rank's line, in rank order (alone: this line). */
void ranks_print_in_order(const char *line);

#endif
