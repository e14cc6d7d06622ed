/*
 * The trainer's divergence check at the step it happens (issue 11, item 4):
 * a model whose weights hold NaN gives a NaN loss on the first step, and the
 * run stops with CLFORMER_ERR_DIVERGED naming step 1, saving nothing.
 * (The exploding-loss half is test_cmd_train's diverging_run test.)
 */
#include "harness.h"
#include "model.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void nan_loss_stops_the_run_at_its_step(void **state)
{
    (void)state;
    char dir[64], src[128], save[128];
    assert_true(harness_temp_dir(dir, sizeof dir, "divergence"));
    harness_path(src, sizeof src, dir, "train.txt");
    harness_path(save, sizeof save, dir, "model.safetensors");
    harness_write_file(src, "a b c\nb c d\nc d e\nd e f\n");
    clformer_train_options o;
    clformer_train_options_default(&o);
    o.src_path = o.tgt_path = src;
    o.steps = 5;
    o.save_path = save;
    o.save_every = 1;
    o.config.d_model = 16;
    o.config.n_heads = 2;
    o.config.d_ff = 16;
    o.config.n_enc_layers = o.config.n_dec_layers = 1;
    clformer_trainer *t;
    assert_ok(clformer_trainer_create(hctx(), &o, &t));
    cf_model *m = clformer_trainer_model(t);
    assert_ok(cf_fill_u32(hctx(), m->params, 0, m->layout.total, 0x7fc00000u)); /* NaN */
    clformer_train_result res;
    clformer_status st = clformer_trainer_run(t, &res);
    if (st != CLFORMER_ERR_DIVERGED) fail_msg("%s: %s", clformer_status_name(st), clformer_last_error());
    const char *msg = clformer_last_error();
    if (!strstr(msg, "diverged at step 1: the loss is NaN") || !strstr(msg, "Nothing was saved"))
        fail_msg("unexpected message: %s", msg);
    assert_int_not_equal(access(save, F_OK), 0);
    clformer_trainer_free(t);
    assert_true(harness_remove_tree(dir));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(nan_loss_stops_the_run_at_its_step),
};
HARNESS_DEVICE_MAIN("trainer divergence", tests)
