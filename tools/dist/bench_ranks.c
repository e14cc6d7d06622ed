/*
 * bench_ranks: where the time of a data-parallel training step goes.
 *
 *   mpirun -np 2 build/bench_ranks [--config tiny|small|base] [--batch B] [--len T]
 *                                  [--steps N] [--blocking]
 *
 * Every rank trains a preset model on synthetic batches (B sentences of T
 * tokens per rank) with the gradients summed over ranks, and rank 0 prints
 * the step split into compute (forward and backward, up to the gradients
 * being ready), all-reduce (summing the gradients over ranks, waiting
 * included, after backward), overlap (the part of compute during which
 * buckets were already being summed; --blocking: the blocking sum after
 * backward, no overlap) and the rest (clipping, Adam, the loss read-back),
 * as fractions of the step, averaged over ranks and timed steps, with the
 * gradient bytes each rank all-reduces per step. Device per rank as in
 * `clformer train` (CLFORMER_DEVICE, local rank).
 */
#include "clformer.h"
#include "cli.h"
#include "ranks.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N bench_ranks [--config tiny|small|base] [--batch B] "
                 "[--len T] [--steps N] [--blocking]\n"
                 "Splits a data-parallel training step into compute, all-reduce, overlap and "
                 "the rest\n(fractions of the step, rank 0 prints). Defaults: tiny, 32, 32, 10.\n");
}

int main(int argc, char **argv)
{
    ranks_init(&argc, &argv);
    const char *config = "tiny";
    long B = 32, T = 32, steps = 10;
    bool blocking = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocking")) {
            blocking = true;
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            ranks_finalize();
            return 0;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            ranks_abort(2);
        }
        if (!strcmp(argv[i], "--config")) config = argv[++i];
        else if (!strcmp(argv[i], "--batch")) B = atol(argv[++i]);
        else if (!strcmp(argv[i], "--len")) T = atol(argv[++i]);
        else if (!strcmp(argv[i], "--steps")) steps = atol(argv[++i]);
        else {
            usage(stderr);
            ranks_abort(2);
        }
    }
    const ranks_info *ri = ranks_get();
    clformer_config c;
    clformer_config_default(&c);
    if (clformer_config_preset(config, &c) != CLFORMER_OK) {
        fprintf(stderr, "bench_ranks: %s\n", clformer_last_error());
        usage(stderr);
        ranks_abort(2);
    }
    if (B < 1 || T < 3 || steps < 1) {
        usage(stderr);
        ranks_abort(2);
    }
    c.src_vocab = c.tgt_vocab = 8000;
    c.dropout = 0.0f;
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *session = NULL;
    clformer_collective coll;
    ranks_collective(&coll);
    if (blocking) coll.allreduce_start_f32 = NULL, coll.test = NULL, coll.wait = NULL;
    if (ranks_context_create(&ctx) != CLFORMER_OK ||
        clformer_model_create(ctx, &c, 1, &m) != CLFORMER_OK ||
        clformer_model_set_collective(m, &coll) != CLFORMER_OK ||
        clformer_session_create(m, &session) != CLFORMER_OK) {
        fprintf(stderr, "bench_ranks: rank %d: %s\n", ri->rank, clformer_last_error());
        ranks_abort(1);
    }
    int32_t *src = malloc((size_t)(B * T) * sizeof *src);
    int32_t *tgt = malloc((size_t)(B * T) * sizeof *tgt);
    for (long i = 0; i < B * T; i++) src[i] = tgt[i] = 4 + (int32_t)((i * 7919 + ri->rank) % 7000);
    for (long r = 0; r < B; r++) {
        src[r * T] = tgt[r * T] = CLFORMER_SOS;
        src[r * T + T - 1] = tgt[r * T + T - 1] = CLFORMER_EOS;
    }
    const clformer_batch batch = {(size_t)B, (size_t)T, (size_t)T, src, tgt};
    /* sums over timed steps: step, compute, all-reduce, overlap */
    double sums[4] = {0, 0, 0, 0};
    size_t bytes = 0;
    for (long s = 0; s < steps + 2; s++) { /* two untimed steps: kernels compile */
        clformer_step_stats st;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = cli_now_s();
        if (clformer_session_train_step(session, &batch, 1e-4f, &st) != CLFORMER_OK) {
            fprintf(stderr, "bench_ranks: rank %d: %s\n", ri->rank, clformer_last_error());
            ranks_abort(1);
        }
        if (s < 2) continue;
        sums[0] += cli_now_s() - t0;
        sums[1] += st.compute_s;
        sums[2] += st.allreduce_s;
        sums[3] += st.overlap_s;
        bytes = st.allreduce_bytes;
    }
    MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (ri->rank == 0) {
        const double step = sums[0], compute = sums[1], reduce = sums[2];
        printf("%d ranks, %s config, %zu parameters, batch %ld x %ld tokens per rank, "
               "%ld timed steps, %s sum\n", ri->size, config, clformer_model_parameter_count(m),
               B, T, steps, blocking ? "blocking" : "overlapped");
        printf("step            %8.1f ms (mean over ranks)\n",
               1e3 * step / (double)(steps * ri->size));
        printf("compute         %8.3f of the step\n", compute / step);
        printf("all-reduce wait %8.3f of the step\n", reduce / step);
        printf("overlap         %8.3f of the step (of compute: buckets being summed)\n",
               sums[3] / step);
        printf("rest            %8.3f of the step (clipping, Adam, loss read-back)\n",
               (step - compute - reduce) / step);
        printf("all-reduced     %8.2f MiB per step per rank\n", (double)bytes / 1048576.0);
    }
    free(src);
    free(tgt);
    clformer_session_free(session);
    clformer_model_free(m);
    clformer_context_free(ctx);
    ranks_finalize();
    return 0;
}
