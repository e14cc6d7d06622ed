/*
 * The demo task: determinism, sizes, lengths, vocabularies, disjoint splits,
 * and every target checked against the rules by an independent parser of the
 * source grammar (its dictionary is the specification in demo_task.h).
 */
#include "data_util.h"

#include "batcher.h"
#include "corpus.h"
#include "demo_task.h"
#include "vocab.h"

/* --- the specification, written out again for the parser ---------------------- */
static const char *const DET[] = {"ka", "kai", "mo", "moi"};
static const char *const DET_T[] = {"el", "els", "un", "uns"};
static const char *const NOUN[] = {"dabu", "fenir", "golo", "hasik", "jumo",
                                   "lerat", "nupi", "sorem", "tavi", "wuzel"};
static const char *const NOUN_T[] = {"toram", "bisel", "kuvan", "melor", "paxit",
                                     "renud", "sifan", "volum", "yarek", "zonib"};
static const char GENDER[] = "aoaooaaoao"; /* adjective ending per noun */
static const char *const ADJ[] = {"bri", "kelo", "minu", "parsa", "ruvo", "silti", "tepo", "zana"};
static const char *const ADJ_T[] = {"ner", "fal", "sud", "gim", "lak", "pom", "rix", "tul"};
static const char *const VERB[] = {"lota", "veni", "sura", "gamba", "pelu", "dorni"};
static const char *const VERB_T[] = {"kasu", "dremi", "fola", "wento", "hiru", "belsa"};
static const char *const ADV[] = {"yesto", "kuma", "rafi", "olen"};
static const char *const ADV_T[] = {"vexa", "lomu", "tirsi", "panu"};

static int find(const char *const *list, int n, const char *w)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], w) == 0) return i;
    return -1;
}

typedef struct {
    char *w[16];
    int n, at;
} words;

static words split(char *s)
{
    words ws = {{0}, 0, 0};
    for (char *t = strtok(s, " "); t; t = strtok(NULL, " ")) {
        assert_true(ws.n < 16);
        ws.w[ws.n++] = t;
    }
    return ws;
}

/* Parses DET ADJ* NOUN at ws->at; appends its translation to out. Returns
 * whether the determiner is plural. */
static bool translate_np(words *ws, char *out)
{
    assert_true(ws->at < ws->n);
    int d = find(DET, 4, ws->w[ws->at++]);
    assert_true(d >= 0);
    int adj[4], n_adj = 0, noun;
    while (ws->at < ws->n && (noun = find(NOUN, 10, ws->w[ws->at])) < 0) {
        assert_true(n_adj < 3);
        adj[n_adj] = find(ADJ, 8, ws->w[ws->at++]);
        assert_true(adj[n_adj] >= 0);
        n_adj++;
    }
    assert_true(ws->at < ws->n);
    ws->at++;
    bool plural = d == 1 || d == 3;
    sprintf(out + strlen(out), "%s%s %s%s", *out ? " " : "", DET_T[d], NOUN_T[noun],
            plural ? "i" : "");
    for (int k = 0; k < n_adj; k++)
        sprintf(out + strlen(out), " %s%c", ADJ_T[adj[k]], GENDER[noun]);
    return plural;
}

/* The rules: SOV, adjectives after the noun with gender, plural nouns, verb
 * agreeing with the subject. */
static void translate(const char *src, char *out)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", src);
    words ws = split(buf);
    out[0] = '\0';
    bool plural = translate_np(&ws, out);
    assert_true(ws.at < ws.n);
    int v = find(VERB, 6, ws.w[ws.at++]);
    assert_true(v >= 0);
    if (v < 4) translate_np(&ws, out);
    if (ws.at < ws.n) {
        int a = find(ADV, 4, ws.w[ws.at++]);
        assert_true(a >= 0);
        sprintf(out + strlen(out), " %s", ADV_T[a]);
    }
    assert_int_equal(ws.at, ws.n);
    sprintf(out + strlen(out), " %s%s", VERB_T[v], plural ? "n" : "");
}

static int count_words(const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++) n += *p != ' ' && (p == s || p[-1] == ' ');
    return n;
}

/* --- tests ------------------------------------------------------------------------ */

static void follows_the_rules(void **state)
{
    (void)state;
    cf_demo_data d;
    assert_ok(cf_demo_generate(1, CF_DEMO_TRAIN_DEFAULT, CF_DEMO_TEST_DEFAULT, &d));
    assert_int_equal(d.train.n, CF_DEMO_TRAIN_DEFAULT);
    assert_int_equal(d.test.n, CF_DEMO_TEST_DEFAULT);
    assert_true(CF_DEMO_TRAIN_DEFAULT >= 8000 && CF_DEMO_TRAIN_DEFAULT <= 20000);
    int min_len = 99, max_len = 0, long_range = 0, plural = 0;
    for (int split_i = 0; split_i < 2; split_i++) {
        const cf_demo_split *s = split_i ? &d.test : &d.train;
        for (size_t i = 0; i < s->n; i++) {
            char want[256];
            translate(s->src[i], want);
            if (strcmp(want, s->tgt[i]) != 0)
                fail_msg("'%s' -> '%s', the rules give '%s'", s->src[i], s->tgt[i], want);
            int n = count_words(s->src[i]);
            assert_int_equal(count_words(s->tgt[i]), n);
            if (n < min_len) min_len = n;
            if (n > max_len) max_len = n;
            if (!split_i) {
                long_range += n >= 7; /* the verb moves 4+ places from its subject */
                plural += s->tgt[i][strlen(s->tgt[i]) - 1] == 'n';
            }
        }
    }
    assert_int_equal(min_len, 3);
    assert_int_equal(max_len, 12);
    /* non-trivial: many long sentences, both verb numbers common */
    assert_true(long_range > CF_DEMO_TRAIN_DEFAULT / 3);
    assert_true(plural > CF_DEMO_TRAIN_DEFAULT / 3 && plural < 2 * CF_DEMO_TRAIN_DEFAULT / 3);
    cf_demo_free(&d);
}

static void the_documented_example(void **state)
{
    (void)state;
    char out[256];
    translate("kai bri minu golo lota mo dabu yesto", out);
    assert_string_equal(out, "els kuvani nera suda un toram vexa kasun");
    assert_non_null(strstr(cf_demo_description(), "kai bri minu golo lota mo dabu yesto"));
    assert_non_null(strstr(cf_demo_description(), "els kuvani nera suda un toram vexa kasun"));
}

static void deterministic_and_seeded(void **state)
{
    (void)state;
    cf_demo_data a, b, c;
    assert_ok(cf_demo_generate(7, 3000, 200, &a));
    assert_ok(cf_demo_generate(7, 3000, 200, &b));
    assert_ok(cf_demo_generate(8, 3000, 200, &c));
    size_t same_as_c = 0;
    for (size_t i = 0; i < 3000; i++) {
        assert_string_equal(a.train.src[i], b.train.src[i]);
        assert_string_equal(a.train.tgt[i], b.train.tgt[i]);
        same_as_c += strcmp(a.train.src[i], c.train.src[i]) == 0;
    }
    for (size_t i = 0; i < 200; i++) assert_string_equal(a.test.src[i], b.test.src[i]);
    assert_true(same_as_c < 100);
    cf_demo_free(&a);
    cf_demo_free(&b);
    cf_demo_free(&c);
}

static int by_string(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void splits_are_disjoint_and_distinct(void **state)
{
    (void)state;
    cf_demo_data d;
    assert_ok(cf_demo_generate(3, 20000, 200, &d));
    /* every source among all 20200, sorted: no two equal */
    size_t n = d.train.n + d.test.n;
    const char **all = malloc(n * sizeof *all);
    for (size_t i = 0; i < d.test.n; i++) all[i] = d.test.src[i];
    for (size_t i = 0; i < d.train.n; i++) all[d.test.n + i] = d.train.src[i];
    qsort(all, n, sizeof *all, by_string);
    for (size_t i = 1; i < n; i++)
        if (strcmp(all[i - 1], all[i]) == 0) fail_msg("'%s' occurs twice", all[i]);
    free(all);
    cf_demo_free(&d);
}

static void through_the_data_pipeline(void **state)
{
    (void)state;
    cf_demo_data d;
    assert_ok(cf_demo_generate(1, CF_DEMO_TRAIN_DEFAULT, CF_DEMO_TEST_DEFAULT, &d));
    cf_parallel_text *train, *test;
    assert_ok(cf_parallel_text_from_lines((const char *const *)d.train.src,
                                          (const char *const *)d.train.tgt, d.train.n,
                                          "demo train source", "demo train target", &train));
    assert_ok(cf_parallel_text_from_lines((const char *const *)d.test.src,
                                          (const char *const *)d.test.tgt, d.test.n,
                                          "demo test source", "demo test target", &test));
    cf_vocab *sv, *tv;
    assert_ok(cf_vocab_build(train->src, train->n, 1, 0, &sv));
    assert_ok(cf_vocab_build(train->tgt, train->n, 1, 0, &tv));
    assert_int_equal(cf_vocab_size(sv), 4 + 32); /* every word of both languages occurs */
    assert_int_equal(cf_vocab_size(tv), 4 + 56);
    cf_corpus *ctrain, *ctest;
    assert_ok(cf_corpus_encode(train, sv, tv, 14, &ctrain));
    assert_ok(cf_corpus_encode(test, sv, tv, 14, &ctest));
    assert_int_equal(ctrain->n, CF_DEMO_TRAIN_DEFAULT);
    assert_int_equal(ctrain->n_too_long + ctrain->n_empty, 0);
    assert_int_equal(ctest->n_src_unk + ctest->n_tgt_unk, 0);
    cf_batcher_config cfg = {.batch_size = 64, .shuffle = true, .seed = 1};
    cf_batcher *b;
    assert_ok(cf_batcher_create(ctrain, &cfg, &b));
    cf_batch bt = {0};
    assert_ok(cf_batcher_next(b, &bt));
    assert_int_equal(bt.B, 64);
    assert_true(bt.S <= 14 && bt.T <= 13);
    cf_batch_free(&bt);
    cf_batcher_free(b);
    cf_corpus_free(ctrain);
    cf_corpus_free(ctest);
    cf_vocab_free(sv);
    cf_vocab_free(tv);
    cf_parallel_text_free(train);
    cf_parallel_text_free(test);
    cf_demo_free(&d);
}

static void bad_sizes(void **state)
{
    (void)state;
    cf_demo_data d;
    assert_error(cf_demo_generate(1, 100, 0, &d), CLFORMER_ERR_INVALID_ARGUMENT,
                 "at least one test pair", "0 test pairs");
    assert_null(d.train.src);
    assert_error(cf_demo_generate(1, 1000000, 1, &d), CLFORMER_ERR_INVALID_ARGUMENT,
                 "1 to 1000000 pairs");
    assert_ok(cf_demo_generate(1, 0, 5, &d)); /* a test set alone is fine */
    assert_int_equal(d.train.n, 0);
    assert_int_equal(d.test.n, 5);
    cf_demo_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(follows_the_rules),
        cmocka_unit_test(the_documented_example),
        cmocka_unit_test(deterministic_and_seeded),
        cmocka_unit_test(splits_are_disjoint_and_distinct),
        cmocka_unit_test(through_the_data_pipeline),
        cmocka_unit_test(bad_sizes),
    };
    return cmocka_run_group_tests_name("demo task", tests, NULL, NULL);
}
