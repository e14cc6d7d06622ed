/*
 * `clformer translate` and `clformer eval --model` end to end on each device:
 * runs $CLFORMER_BINARY with CLFORMER_DEVICE set to the device under test on
 * the tiny parity model (tests/data/parity/e_tiny_oclgrind) and checks its
 * output against the library in this process: the same sentences encoded
 * with the model's vocabulary, clformer_session_translate, and
 * clformer_session_eval_loss. Also the output file (atomic), the attention
 * PNG, empty lines, truncation, and the errors for broken checkpoints and
 * bad flags. The child's stderr is copied to ours, so that check_log.cmake
 * sees any Oclgrind report from it. On the simulator the input is smaller
 * and decoding shorter.
 */
#include "harness.h"
#include "bleu.h"
#include "text.h"
#include "vocab.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char out[16384], err[16384]; /* the last run's stdout and stderr */
/* the child's stderr is copied to ours, for check_log.cmake */
static const harness_cmd cli = {out, sizeof out, err, sizeof err, .echo_err = true};

static const char *model_path(void)
{
    static char path[512];
    const char *data = getenv("CLFORMER_TEST_DATA");
    if (!data || !*data) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    snprintf(path, sizeof path, "%s/parity/e_tiny_oclgrind/model.safetensors",
             data ? data : "");
    return path;
}

/* --- running the tool ------------------------------------------------------ */

typedef struct {
    const char *v[48];
    int n;
} args;

/* Appends NULL-terminated arguments. */
static void add(args *a, ...)
{
    va_list ap;
    va_start(ap, a);
    for (const char *s; (s = va_arg(ap, const char *));) {
        assert_true(a->n < 46);
        a->v[a->n++] = s;
    }
    va_end(ap);
}

/* Runs clformer with `a` on the device under test, stdin from `in` (NULL:
 * /dev/null); returns the exit code. */
static int run(const char *in, args *a)
{
    a->v[a->n] = NULL;
    harness_cmd cmd = cli;
    cmd.in = in;
    return harness_run_clformer_argv(&cmd, a->v);
}

static void expect(int got, int want, const char *needle)
{
    harness_expect_run(&cli, got, want, needle);
}

static size_t count_occurrences(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Splits text into at most cap lines (in place); returns the count. */
static size_t split_lines(char *text, char **lines, size_t cap)
{
    size_t n = 0;
    for (char *p = text; *p && n < cap;) {
        char *nl = strchr(p, '\n');
        if (!nl) fail_msg("output line %zu has no newline: '%s'", n + 1, p);
        *nl = '\0';
        lines[n++] = p;
        p = nl + 1;
    }
    return n;
}

/* --- the test input ------------------------------------------------------ */

/* Source lines: a blank one, one longer than the model's max_len of 8 (cut
 * to fit), a word outside the vocabulary; references for eval. Smaller on
 * the simulator. */
typedef struct {
    const char *src[6], *ref[6];
    size_t n;
    size_t usable; /* pairs the loss counts: both sides non-empty and <= max_len */
    const char *max_len; /* --max-len, or NULL for the model's */
} input;

static input test_input(void)
{
    if (harness_is_slow())
        return (input){{"s5 s8", "", "s6 s9 s10 s11 s4 s5 s6 s7 s8"}, {"t7 t9", "", "t5"}, 3, 1,
                       "3"};
    return (input){{"s5 s10", "", "s6 s7", "s8 s9 s10 s11 s4 s5 s6 s7 s8", "zebra s9"},
                   {"t9 t7 t9", "", "t10 t7", "t9 t9 t9 t9 t9 t6", "t9 t9 t9"}, 5, 3, NULL};
}

static void write_lines(const char *path, const char *const *lines, size_t n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    fclose(f);
}

/* --- the library side ------------------------------------------------------ */

typedef struct {
    clformer_model *model;
    clformer_session *session;
    cf_vocab *src, *tgt;
    int max_len;
} library;

static void library_open(library *l)
{
    assert_ok(clformer_model_load(hctx(), model_path(), &l->model));
    assert_ok(clformer_session_create(l->model, &l->session));
    const clformer_config *c = clformer_model_config(l->model);
    l->max_len = c->max_len;
    assert_ok(cf_vocab_from_tokens(clformer_model_src_vocab(l->model), (size_t)c->src_vocab,
                                   "src", &l->src));
    assert_ok(cf_vocab_from_tokens(clformer_model_tgt_vocab(l->model), (size_t)c->tgt_vocab,
                                   "tgt", &l->tgt));
}

static void library_close(library *l)
{
    cf_vocab_free(l->src);
    cf_vocab_free(l->tgt);
    clformer_session_free(l->session);
    clformer_model_free(l->model);
}

/* <sos> words <eos>, cut to max_len with <eos> kept last. */
static int32_t *encode(const library *l, const cf_vocab *v, const char *s, size_t *len)
{
    size_t n = cf_vocab_encode(v, s, strlen(s), true, NULL, 0, NULL);
    int32_t *ids = hmalloc(n * sizeof *ids);
    cf_vocab_encode(v, s, strlen(s), true, ids, n, NULL);
    if (n > (size_t)l->max_len) {
        n = (size_t)l->max_len;
        ids[n - 1] = CLFORMER_EOS;
    }
    *len = n;
    return ids;
}

/* One sentence alone through clformer_session_translate; "" for a blank line. */
static char *library_translate(const library *l, const char *sentence, int beam,
                               const char *max_len)
{
    size_t pos = 0, start, tl;
    if (!cf_next_token(sentence, strlen(sentence), &pos, &start, &tl)) return strdup("");
    size_t n;
    int32_t *ids = encode(l, l->src, sentence, &n);
    clformer_decode_options o;
    clformer_decode_options_default(&o);
    o.beam = beam;
    o.max_len = max_len ? atoi(max_len) : 0;
    clformer_translation tr;
    assert_ok(clformer_session_translate(l->session, ids, 1, n, &o, &tr));
    char *text;
    assert_ok(cf_vocab_decode(l->tgt, tr.tokens, tr.lengths[0], &text));
    clformer_translation_free(&tr);
    free(ids);
    return text;
}

/* --- tests ------------------------------------------------------------------ */

static int setup(void **state)
{
    (void)state;
    return harness_temp_dir(dir, sizeof dir, "cmd_tr") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

static void expect_png(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) fail_msg("%s was not written", path);
    assert_true(sb.st_size > 0);
    unsigned char magic[8] = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(magic, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(magic, "\x89PNG\r\n\x1a\n", 8);
    remove(path);
}

/* No temp file of an atomic write is left in the directory. */
static void expect_no_temp_files(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) fail_msg("temp file left behind: %s", e->d_name);
    closedir(d);
}

/* Checks one run's stdout against the library, sentence by sentence. */
static void expect_library_output(const library *l, const input *in, int beam)
{
    char *lines[16];
    assert_int_equal(split_lines(out, lines, 16), in->n);
    for (size_t i = 0; i < in->n; i++) {
        char *want = library_translate(l, in->src[i], beam, in->max_len);
        if (strcmp(lines[i], want))
            fail_msg("beam %d, line %zu ('%s'): the tool gave '%s', the library '%s'", beam,
                     i + 1, in->src[i], lines[i], want);
        free(want);
    }
}

/* Every output line: empty for a blank input line, else regular target tokens. */
static void expect_plain_tokens(const library *l, const input *in, char *text)
{
    char *lines[16];
    assert_int_equal(split_lines(text, lines, 16), in->n);
    for (size_t i = 0; i < in->n; i++) {
        if (!*in->src[i] && *lines[i]) fail_msg("blank line %zu gave '%s'", i + 1, lines[i]);
        char *save = NULL;
        for (char *tok = strtok_r(lines[i], " ", &save); tok; tok = strtok_r(NULL, " ", &save))
            if (cf_vocab_find(l->tgt, tok) < CF_N_SPECIALS)
                fail_msg("line %zu holds '%s'", i + 1, tok);
    }
}

static void translate_matches_library(void **state)
{
    (void)state;
    input in = test_input();
    char src[128], got[128], png[128];
    harness_path(src, sizeof src, dir, "src.txt");
    harness_path(got, sizeof got, dir, "out.txt");
    harness_path(png, sizeof png, dir, "attention.png");
    write_lines(src, in.src, in.n);
    library l;
    library_open(&l);

    /* greedy, one sentence per batch, --input to --output: the library's ids
     * exactly; the file appears whole, nothing on stdout, no temp file left */
    args a = {0};
    add(&a, "translate", "--model", model_path(), "--input", src, "--output", got,
        "--batch-size", "1", "--attention", png, "--attention-mode", "mean", NULL);
    if (in.max_len) add(&a, "--max-len", in.max_len, NULL);
    expect(run(NULL, &a), 0, "1 source sentence longer than the model's max_len");
    assert_int_equal(count_occurrences(err, "longer than the model's max_len"), 1);
    assert_non_null(strstr(err, "wrote the cross-attention of line 1"));
    assert_non_null(strstr(err, hctx()->info.name));
    assert_string_equal(out, "");
    expect_no_temp_files();
    expect_png(png);
    char greedy[sizeof out];
    harness_slurp(got, greedy, sizeof greedy);
    memcpy(out, greedy, sizeof out);
    expect_library_output(&l, &in, 1);

    /* --beam 1 is greedy; stdin to stdout */
    a.n = 0;
    add(&a, "translate", "--model", model_path(), "--batch-size", "1", "--beam", "1", NULL);
    if (in.max_len) add(&a, "--max-len", in.max_len, NULL);
    expect(run(src, &a), 0, NULL);
    assert_string_equal(out, greedy);

    /* beam 3 against the library's beam 3; the figure is then decoded greedily */
    a.n = 0;
    add(&a, "translate", "--model", model_path(), "--batch-size", "1", "--beam", "3",
        "--attention", png, NULL);
    if (in.max_len) add(&a, "--max-len", in.max_len, NULL);
    expect(run(src, &a), 0, "decoded greedily");
    expect_library_output(&l, &in, 3);
    expect_png(png);

    /* default batching (length-sorted, padded): well-formed lines, in order */
    if (!harness_is_slow()) {
        a.n = 0;
        add(&a, "translate", "--model", model_path(), NULL);
        expect(run(src, &a), 0, NULL);
        expect_plain_tokens(&l, &in, out);
    }
    library_close(&l);
}

static void eval_model_reports_loss(void **state)
{
    (void)state;
    input in = test_input();
    char src[128], ref[128], hyp[128];
    harness_path(src, sizeof src, dir, "src.txt");
    harness_path(ref, sizeof ref, dir, "ref.txt");
    harness_path(hyp, sizeof hyp, dir, "hyp.txt");
    write_lines(src, in.src, in.n);
    write_lines(ref, in.ref, in.n);

    args a = {0};
    add(&a, "eval", "--model", model_path(), "--src", src, "--ref", ref, "--json", "--output",
        hyp, NULL);
    if (in.max_len) add(&a, "--max-len", in.max_len, NULL);
    expect(run(NULL, &a), 0, NULL);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    if (!j) fail_msg("not JSON (%s): %s", jerr.text, out);
    const double loss = json_number_value(json_object_get(j, "loss"));
    const double ppl = json_number_value(json_object_get(j, "perplexity"));
    const double bleu = json_number_value(json_object_get(j, "bleu"));
    assert_true(json_is_array(json_object_get(j, "precisions")));
    assert_int_equal(json_array_size(json_object_get(j, "precisions")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "sentences")), in.n - 1);
    assert_int_equal(json_integer_value(json_object_get(j, "skipped")), in.n - in.usable);
    assert_true(json_number_value(json_object_get(j, "tokens_per_s")) >= 0);
    assert_true(json_is_number(json_object_get(j, "bp")));
    const json_int_t hyp_len = json_integer_value(json_object_get(j, "hyp_len"));
    json_decref(j);
    assert_true(isfinite(loss) && loss > 0);
    assert_true(fabs(ppl - exp(loss)) <= 1e-9 * ppl);

    /* BLEU of the written translations against the references */
    char text[sizeof out];
    harness_slurp(hyp, text, sizeof text);
    char *lines[16];
    assert_int_equal(split_lines(text, lines, 16), in.n);
    cf_bleu_result b;
    assert_ok(cf_bleu_corpus((const char *const *)lines, in.ref, in.n, CF_BLEU_TOKENIZE_13A,
                             false, &b)); /* eval's default */
    assert_true(fabs(bleu - b.score) <= 1e-12);
    assert_int_equal(hyp_len, (json_int_t)b.stats.hyp_len);

    /* the loss: the usable pairs in one padded batch through the library */
    library l;
    library_open(&l);
    int32_t *ids[2][6];
    size_t len[2][6], S = 0, T = 0, B = 0;
    for (size_t i = 0; i < in.n; i++) {
        size_t ls = cf_vocab_encode(l.src, in.src[i], strlen(in.src[i]), true, NULL, 0, NULL);
        size_t lt = cf_vocab_encode(l.tgt, in.ref[i], strlen(in.ref[i]), true, NULL, 0, NULL);
        if (ls <= 2 || lt <= 2 || ls > (size_t)l.max_len || lt > (size_t)l.max_len) continue;
        ids[0][B] = encode(&l, l.src, in.src[i], &len[0][B]);
        ids[1][B] = encode(&l, l.tgt, in.ref[i], &len[1][B]);
        if (len[0][B] > S) S = len[0][B];
        if (len[1][B] > T) T = len[1][B];
        B++;
    }
    assert_int_equal(B, in.usable);
    int32_t *bs = calloc(B * S, sizeof *bs), *bt = calloc(B * T, sizeof *bt);
    for (size_t b2 = 0; b2 < B; b2++) {
        memcpy(bs + b2 * S, ids[0][b2], len[0][b2] * sizeof *bs);
        memcpy(bt + b2 * T, ids[1][b2], len[1][b2] * sizeof *bt);
        free(ids[0][b2]);
        free(ids[1][b2]);
    }
    const clformer_batch batch = {B, S, T, bs, bt};
    double sum;
    size_t tokens;
    assert_ok(clformer_session_eval_loss(l.session, &batch, &sum, &tokens));
    const double want = sum / (double)tokens;
    if (fabs(loss - want) > 1e-5 * fabs(want))
        fail_msg("eval's loss %.9g, the library's %.9g over the same %zu pairs", loss, want, B);
    free(bs);
    free(bt);
    library_close(&l);

    /* the human-readable form: sacreBLEU's line and the loss line */
    if (!harness_is_slow()) {
        a.n = 0;
        add(&a, "eval", "--model", model_path(), "--src", src, "--ref", ref, NULL);
        expect(run(NULL, &a), 0, "BLEU = ");
        assert_non_null(strstr(out, "loss = "));
        assert_non_null(strstr(out, "perplexity = "));

        /* --lowercase (sacreBLEU -lc): the references in capitals score as
         * the lower-case ones do without it */
        char upper[128], caps[6][64];
        const char *caps_ref[6];
        harness_path(upper, sizeof upper, dir, "ref_upper.txt");
        for (size_t i = 0; i < in.n; i++) {
            snprintf(caps[i], sizeof caps[i], "%s", in.ref[i]);
            for (char *c = caps[i]; *c; c++) *c = (char)toupper((unsigned char)*c);
            caps_ref[i] = caps[i];
        }
        write_lines(upper, caps_ref, in.n);
        a.n = 0;
        add(&a, "eval", "--model", model_path(), "--src", src, "--ref", upper, "--lowercase",
            "--tokenize", "none", "--json", NULL);
        if (in.max_len) add(&a, "--max-len", in.max_len, NULL);
        expect(run(NULL, &a), 0, NULL);
        j = json_loads(out, 0, &jerr);
        if (!j) fail_msg("not JSON (%s): %s", jerr.text, out);
        assert_string_equal(json_string_value(json_object_get(j, "signature")),
                            "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0");
        assert_ok(cf_bleu_corpus((const char *const *)lines, in.ref, in.n, CF_BLEU_TOKENIZE_NONE,
                                 false, &b));
        assert_true(b.score > 0); /* a case-sensitive score against capitals would be 0 */
        assert_true(fabs(json_number_value(json_object_get(j, "bleu")) - b.score) <= 1e-12);
        json_decref(j);
    }
}

static void broken_checkpoints_fail_cleanly(void **state)
{
    (void)state;
    char src[128], cut[128], junk[128], got[128];
    harness_path(src, sizeof src, dir, "src.txt");
    harness_path(cut, sizeof cut, dir, "cut.safetensors");
    harness_path(junk, sizeof junk, dir, "junk.safetensors");
    harness_path(got, sizeof got, dir, "never.txt");
    harness_write_file(src, "s4 s5\n");

    /* the checkpoint cut in its tensor data, and cut inside its header */
    FILE *f = fopen(model_path(), "rb");
    assert_non_null(f);
    static char bytes[1 << 16];
    size_t size = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    assert_true(size > 1000 && size < sizeof bytes);
    const size_t cuts[] = {size / 2, 100};
    for (size_t k = 0; k < 2; k++) {
        f = fopen(cut, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, cuts[k], f), cuts[k]);
        fclose(f);
        args a = {0};
        add(&a, "translate", "--model", cut, "--input", src, "--output", got, NULL);
        expect(run(NULL, &a), 1, "loading the model");
        assert_non_null(strstr(err, cut));
        assert_int_equal(count_occurrences(err, "\n"), 1); /* one line */
        assert_int_equal(access(got, F_OK), -1);
    }

    /* bytes that are no safetensors file at all */
    f = fopen(junk, "wb");
    assert_non_null(f);
    for (int i = 0; i < 4096; i++) fputc((i * 7919 + 13) & 0xff, f);
    fclose(f);
    args a = {0};
    add(&a, "translate", "--model", junk, "--input", src, NULL);
    expect(run(NULL, &a), 1, "not a safetensors file");
    assert_non_null(strstr(err, junk));

    /* eval --model goes through the same loader */
    a.n = 0;
    add(&a, "eval", "--model", junk, "--src", src, "--ref", src, NULL);
    expect(run(NULL, &a), 1, junk);

    /* a safetensors file that is not a clformer checkpoint */
    char fixture[600];
    snprintf(fixture, sizeof fixture, "%s/parity/e_tiny_oclgrind/fixture.safetensors",
             getenv("CLFORMER_TEST_DATA"));
    a.n = 0;
    add(&a, "translate", "--model", fixture, "--input", src, NULL);
    expect(run(NULL, &a), 1, "not a clformer checkpoint");
    expect_no_temp_files();
}

static void bad_input_and_flags(void **state)
{
    (void)state;
    char src[128], empty[128], missing[128], png[160];
    harness_path(src, sizeof src, dir, "src.txt");
    harness_path(empty, sizeof empty, dir, "empty.txt");
    harness_path(missing, sizeof missing, dir, "missing.txt");
    harness_path(png, sizeof png, dir, "no/such/dir/attention.png");
    harness_write_file(src, "s4 s5\n");
    harness_write_file(empty, "");
    const char *m = model_path();
    args a = {0};

#define EXPECT_RUN(in, code, needle, ...)                                                      \
    do {                                                                                       \
        a.n = 0;                                                                               \
        add(&a, __VA_ARGS__, NULL);                                                            \
        expect(run((in), &a), (code), (needle));                                               \
    } while (0)

    EXPECT_RUN(NULL, 0, "usage: clformer translate", "translate", "--help");
    EXPECT_RUN(NULL, 0, "translate", "--help");
    EXPECT_RUN(src, 2, "--model is required", "translate");
    EXPECT_RUN(src, 2, "--bogus", "translate", "--model", m, "--bogus");
    EXPECT_RUN(src, 2, "--beam must be between 1 and 64, got 0", "translate", "--model", m,
               "--beam", "0");
    EXPECT_RUN(src, 2, "--beam expects a whole number, got 'abc'", "translate", "--model", m,
               "--beam", "abc");
    EXPECT_RUN(src, 2, "--batch-size", "translate", "--model", m, "--batch-size", "-3");
    EXPECT_RUN(src, 2, "--length-penalty", "translate", "--model", m, "--length-penalty", "x");
    EXPECT_RUN(src, 2, "heads|mean", "translate", "--model", m, "--attention", "a.png",
               "--attention-mode", "max");
    EXPECT_RUN(src, 2, "--max-len needs a value", "translate", "--model", m, "--max-len");
    EXPECT_RUN(src, 1, png, "translate", "--model", m, "--attention", png);
    /* a folder named as an output: a usage error (name a file), as in every command */
    EXPECT_RUN(src, 2, "is a folder", "translate", "--model", m, "--attention", dir);
    EXPECT_RUN(src, 2, "is a folder", "translate", "--model", m, "--output", dir);
    EXPECT_RUN(NULL, 1, missing, "translate", "--model", m, "--input", missing);
    EXPECT_RUN(NULL, 1, "empty", "translate", "--model", m, "--input", empty);
    EXPECT_RUN(empty, 1, "stdin", "translate", "--model", m);
    EXPECT_RUN(src, 1, missing, "translate", "--model", missing);
    /* a missing model is named before the input is read (stdin may be a terminal) */
    EXPECT_RUN(empty, 1, "cannot read the model", "translate", "--model", missing);
    EXPECT_RUN(NULL, 1, missing, "eval", "--model", missing, "--src", src, "--ref", src);
    /* a language model's commands name what a translation model takes instead
     * (the one refusal of every such use, clformer_model_check_task) */
    EXPECT_RUN(NULL, 1, "needs a language model (decoder-only); this model is a translation "
               "model (it has an encoder): translate with it", "generate", "--model", m,
               "--prompt", "s4");
    EXPECT_RUN(NULL, 1, "eval --text --model", "eval", "--model", m, "--text", src);
    harness_write_file(empty, "\n \n");
    EXPECT_RUN(empty, 1, "every line", "translate", "--model", m, "--attention", "x.png");
    harness_write_file(missing, "s4\xC3( s5\n");
    EXPECT_RUN(NULL, 1, "missing.txt:1: invalid UTF-8", "translate", "--model", m, "--input",
               missing);
#undef EXPECT_RUN
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(translate_matches_library, setup, teardown),
        cmocka_unit_test_setup_teardown(eval_model_reports_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(broken_checkpoints_fail_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_input_and_flags, setup, teardown),
    };
    return harness_run_device_suite("clformer translate", tests, sizeof tests / sizeof tests[0]);
}
