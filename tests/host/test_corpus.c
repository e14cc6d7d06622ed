/*
 * Parallel corpus: loading (every error names its file, and line where there
 * is one), empty-line skipping, encoding with <sos>/<eos>, the max_len skip
 * count, and the flat token layout.
 */
#include "data_util.h"

#include "corpus.h"
#include "vocab.h"

/* Words of a single-spaced line (the test files are), counted independently
 * of the tokenizer under test. */
static int words(const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++) n += (*p != ' ' && (p == s || p[-1] == ' '));
    return n;
}

static char *read_line(FILE *fp, char *buf, size_t size)
{
    if (!fgets(buf, (int)size, fp)) return NULL;
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

static void loads_and_encodes_small_corpus(void **state)
{
    (void)state;
    char src_path[4096], tgt_path[4096];
    snprintf(src_path, sizeof src_path, "%s", data_path("corpus/small.en"));
    snprintf(tgt_path, sizeof tgt_path, "%s", data_path("corpus/small.de"));
    cf_parallel_text *text;
    assert_ok(cf_parallel_text_load(src_path, tgt_path, &text));
    assert_int_equal(text->n, 20);
    assert_int_equal(text->n_lines, 20);
    assert_int_equal(text->n_empty, 0);
    assert_string_equal(text->src_name, src_path);
    assert_string_equal(text->src[2], "a little girl climbing into a wooden playhouse .");
    assert_int_equal(text->line[19], 20);

    cf_vocab *sv, *tv;
    assert_ok(cf_vocab_build(text->src, text->n, 1, 0, &sv));
    assert_ok(cf_vocab_build(text->tgt, text->n, 1, 0, &tv));
    cf_corpus *c;
    assert_ok(cf_corpus_encode(text, sv, tv, 0, &c));
    assert_int_equal(c->n, 20);
    assert_int_equal(c->n_too_long, 0);
    assert_int_equal(c->n_src_unk + c->n_tgt_unk, 0);
    assert_int_equal(c->offset[0], 0);
    assert_int_equal(c->offset[2 * c->n], c->n_src_tokens + c->n_tgt_tokens);

    /* every sequence is <sos> ids-of-the-words <eos>, checked word by word */
    FILE *fs = fopen(src_path, "r"), *ft = fopen(tgt_path, "r");
    char ls[1024], lt[1024];
    int longest = 0;
    for (size_t i = 0; i < c->n; i++) {
        assert_non_null(read_line(fs, ls, sizeof ls));
        assert_non_null(read_line(ft, lt, sizeof lt));
        for (int side = 0; side < 2; side++) {
            int len;
            const int32_t *ids = side ? cf_corpus_tgt(c, i, &len) : cf_corpus_src(c, i, &len);
            char *line = side ? lt : ls;
            const cf_vocab *v = side ? tv : sv;
            assert_int_equal(len, words(line) + 2);
            assert_int_equal(ids[0], CF_SOS);
            assert_int_equal(ids[len - 1], CF_EOS);
            int k = 1;
            for (char *w = strtok(line, " "); w; w = strtok(NULL, " "), k++)
                assert_string_equal(cf_vocab_token(v, ids[k]), w);
            if (side && len > longest) longest = len;
        }
        assert_int_equal(c->line[i], i + 1);
    }
    assert_int_equal(c->max_tgt_len, longest);
    fclose(fs);
    fclose(ft);
    cf_corpus_free(c);

    /* max_len 15: pairs with more than 13 words on either side are skipped */
    assert_ok(cf_corpus_encode(text, sv, tv, 15, &c));
    size_t too_long = 0;
    for (size_t i = 0; i < text->n; i++)
        too_long += words(text->src[i]) > 13 || words(text->tgt[i]) > 13;
    assert_int_equal(too_long, 8);
    assert_int_equal(c->n_too_long, too_long);
    assert_int_equal(c->n, 20 - too_long);
    assert_true(c->max_src_len <= 15 && c->max_tgt_len <= 15);
    for (size_t i = 0; i < c->n; i++) {
        int len;
        cf_corpus_src(c, i, &len);
        assert_int_equal(len, words(text->src[c->line[i] - 1]) + 2);
    }
    char summary[256];
    cf_corpus_summary(c, summary, sizeof summary);
    assert_string_equal(summary, "12 sentence pairs, 8 skipped (longer than max_len 15)");
    cf_corpus_free(c);

    /* the same through cf_corpus_load, with unknown words */
    cf_vocab *tiny;
    const char *tiny_json = "[\"<pad>\",\"<sos>\",\"<eos>\",\"<unk>\",\"a\",\".\"]";
    assert_ok(cf_vocab_from_json(tiny_json, strlen(tiny_json), "tiny", &tiny));
    assert_ok(cf_corpus_load(src_path, tgt_path, tiny, tiny, 0, &c));
    assert_int_equal(c->n, 20);
    assert_true(c->n_src_unk > 100 && c->n_src_unk < c->n_src_tokens - 40);
    int len;
    const int32_t *ids = cf_corpus_src(c, 2, &len); /* a little girl ... playhouse . */
    assert_int_equal(ids[1], 4);
    assert_int_equal(ids[2], CF_UNK);
    assert_int_equal(ids[len - 2], 5);
    cf_corpus_free(c);

    cf_vocab_free(tiny);
    cf_vocab_free(sv);
    cf_vocab_free(tv);
    cf_parallel_text_free(text);
}

static void load_pair(const char *src, size_t src_size, const char *tgt, size_t tgt_size,
                      cf_parallel_text **text, char **src_path, char **tgt_path)
{
    *src_path = tmp_file("c.src", src, src_size);
    *tgt_path = tmp_file("c.tgt", tgt, tgt_size);
    *text = NULL;
}

#define LOAD(src, tgt) load_pair((src), sizeof(src) - 1, (tgt), sizeof(tgt) - 1, &text, &sp, &tp)

static void file_errors(void **state)
{
    (void)state;
    cf_parallel_text *text = (cf_parallel_text *)1;
    char *sp, *tp;
    char missing[512];
    snprintf(missing, sizeof missing, "%s/nope.en", tmp_dir());
    LOAD("a\n", "b\n");

    assert_error(cf_parallel_text_load(missing, tp, &text), CLFORMER_ERR_IO, "nope.en",
                 "No such file");
    assert_null(text);
    assert_error(cf_parallel_text_load(sp, missing, &text), CLFORMER_ERR_IO, "nope.en");
    assert_error(cf_parallel_text_load(tmp_dir(), tp, &text), CLFORMER_ERR_IO, tmp_dir(),
                 "is a directory");
    free(sp);
    free(tp);

    LOAD("one\ntwo\nthree\nfour\nfive\n", "eins\nzwei\ndrei\nvier\n");
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, sp, "has 5 lines",
                 tp, "has 4");
    free(sp);
    free(tp);

    LOAD("one\ntwo", "eins\nzwei\n\n"); /* a trailing empty line is a line */
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, "has 2 lines",
                 "has 3");
    free(sp);
    free(tp);

    LOAD("", "");
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, sp, tp, "are empty");
    free(sp);
    free(tp);

    LOAD("\n  \nx\n", "a\nb\n\t\n");
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT,
                 "none of the 3 lines holds a sentence pair");
    free(sp);
    free(tp);
    assert_null(text);
}

static void invalid_text(void **state)
{
    (void)state;
    cf_parallel_text *text;
    char *sp, *tp;
    LOAD("ok\nfine\nstill fine\n", "gut\nauch gut\nnicht \xff gut\n");
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, tp, ":3:",
                 "invalid UTF-8 at byte 7", "0xff");
    free(sp);
    free(tp);

    LOAD("caf\xc3\xa9\nover\xc0\xaflong\n", "a\nb\n"); /* é is fine; an overlong '/' is not */
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, sp, ":2:",
                 "byte 5", "0xc0");
    free(sp);
    free(tp);

    LOAD("a\nb\n", "a\ncut \xe2\x82"); /* a truncated sequence at the end of the file */
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, ":2:", "byte 5");
    free(sp);
    free(tp);

    LOAD("a\nb\xed\xa0\x80\n", "a\nb\n"); /* a UTF-16 surrogate */
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, ":2:", "byte 2");
    free(sp);
    free(tp);

    LOAD("a\nb\n", "a\nb\0c\n");
    assert_error(cf_parallel_text_load(sp, tp, &text), CLFORMER_ERR_FORMAT, tp, ":2:",
                 "NUL byte at byte 2");
    free(sp);
    free(tp);
}

static void empty_lines_are_skipped_and_counted(void **state)
{
    (void)state;
    cf_parallel_text *text;
    char *sp, *tp;
    /* BOM, CRLF, a whitespace-only line, an empty line, no final newline */
    LOAD("\xEF\xBB\xBFone two\r\n\r\nthree\r\n \t\nfour", "eins zwei\r\ndrei\r\n\r\nx\nvier");
    assert_ok(cf_parallel_text_load(sp, tp, &text));
    assert_int_equal(text->n_lines, 5);
    assert_int_equal(text->n, 2);
    assert_int_equal(text->n_empty, 3);
    assert_string_equal(text->src[0], "one two\r"); /* text as in the file, minus the BOM */
    assert_string_equal(text->tgt[1], "vier");
    assert_int_equal(text->line[0], 1);
    assert_int_equal(text->line[1], 5);

    cf_vocab *v;
    assert_ok(cf_vocab_build(text->src, text->n, 1, 0, &v));
    assert_int_equal(cf_vocab_size(v), 7); /* one two four: no "\r", no BOM */
    assert_int_equal(cf_vocab_find(v, "four"), 4); /* equal counts: byte order */
    assert_int_equal(cf_vocab_find(v, "one"), 5);
    cf_corpus *c;
    assert_ok(cf_corpus_encode(text, v, v, 0, &c));
    assert_int_equal(c->n_empty, 3);
    assert_int_equal(c->n_lines, 5);
    assert_int_equal(c->line[1], 5);
    char summary[256];
    cf_corpus_summary(c, summary, sizeof summary);
    assert_string_equal(summary, "2 sentence pairs, 3 skipped (empty line)");
    cf_corpus_free(c);
    cf_vocab_free(v);
    cf_parallel_text_free(text);
    free(sp);
    free(tp);
}

static void max_len_errors(void **state)
{
    (void)state;
    const char *src[] = {"a b c", "a b"}, *tgt[] = {"x y", "x y z w"};
    cf_parallel_text *text;
    assert_ok(cf_parallel_text_from_lines(src, tgt, 2, "mem.src", "mem.tgt", &text));
    cf_vocab *v;
    assert_ok(cf_vocab_build(src, 2, 1, 0, &v));
    cf_corpus *c = (cf_corpus *)1;
    assert_error(cf_corpus_encode(text, v, v, 2, &c), CLFORMER_ERR_INVALID_ARGUMENT,
                 "max_len is 2", "at least 3");
    assert_null(c);
    assert_error(cf_corpus_encode(text, v, v, -1, &c), CLFORMER_ERR_INVALID_ARGUMENT,
                 "max_len is -1");
    assert_error(cf_corpus_encode(text, v, v, 4, &c), CLFORMER_ERR_INVALID_ARGUMENT,
                 "mem.src", "mem.tgt", "every one of the 2 sentence pairs", "max_len 4",
                 "source 5, target 6");
    assert_ok(cf_corpus_encode(text, v, v, 5, &c)); /* pair 1 fits exactly: 5 and 4 */
    assert_int_equal(c->n, 1);
    assert_int_equal(c->n_too_long, 1);
    assert_int_equal(c->line[0], 1);
    assert_int_equal(c->max_src_len, 5);
    cf_corpus_free(c);
    cf_vocab_free(v);
    cf_parallel_text_free(text);
}

static void in_memory_lines(void **state)
{
    (void)state;
    const char *src[] = {"ein haus", "", "zwei"}, *tgt[] = {"a house", "nothing", "two"};
    cf_parallel_text *text;
    assert_ok(cf_parallel_text_from_lines(src, tgt, 3, "demo.src", "demo.tgt", &text));
    assert_int_equal(text->n, 2);
    assert_int_equal(text->n_empty, 1);
    assert_string_equal(text->src[1], "zwei");
    assert_int_equal(text->line[1], 3);
    cf_parallel_text_free(text);

    const char *bad[] = {"ok", "caf\xe9"};
    assert_error(cf_parallel_text_from_lines(bad, tgt, 2, "demo.src", "demo.tgt", &text),
                 CLFORMER_ERR_FORMAT, "demo.src:2:", "invalid UTF-8");
    const char *nl[] = {"ok", "two\nlines"};
    assert_error(cf_parallel_text_from_lines(src, nl, 2, "demo.src", "demo.tgt", &text),
                 CLFORMER_ERR_INVALID_ARGUMENT, "demo.tgt: line 2 contains a newline");
    assert_error(cf_parallel_text_from_lines(src, tgt, 0, "demo.src", "demo.tgt", &text),
                 CLFORMER_ERR_FORMAT, "are empty");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_and_encodes_small_corpus),
        cmocka_unit_test(file_errors),
        cmocka_unit_test(invalid_text),
        cmocka_unit_test(empty_lines_are_skipped_and_counted),
        cmocka_unit_test(max_len_errors),
        cmocka_unit_test(in_memory_lines),
    };
    return cmocka_run_group_tests_name("corpus", tests, NULL, tmp_teardown);
}
