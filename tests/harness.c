/* The per-device test runner and the helpers of harness.h. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static cf_ctx *current;
static const uint32_t CANARY_BITS = 0x7fc0dead; /* a NaN payload nothing computes */

cf_ctx *hctx(void) { return current; }

clformer_config harness_small_config(void)
{
    clformer_config c;
    clformer_config_default(&c);
    bool slow = harness_is_slow();
    c.d_model = slow ? 8 : 32;
    c.n_heads = 2;
    c.d_ff = slow ? 16 : 64;
    c.n_enc_layers = slow ? 1 : 2;
    c.n_dec_layers = slow ? 1 : 2;
    c.src_vocab = 19;
    c.tgt_vocab = 23;
    c.max_len = 12;
    return c;
}

void harness_write_reversal_corpus(const char *dir, const char *src_name, const char *tgt_name,
                                   int lines, int min_words, int max_words, uint64_t seed)
{
    static const char *src_words[] = {"red", "cat", "sees", "a", "big", "dog", "runs", "home"};
    static const char *tgt_words[] = {"rot", "katze", "sieht", "ein", "gross", "hund", "rennt", "haus"};
    assert_true(min_words >= 1 && min_words <= max_words && max_words <= 8);
    char ps[512], pt[512];
    harness_path(ps, sizeof ps, dir, src_name);
    harness_path(pt, sizeof pt, dir, tgt_name);
    FILE *s = fopen(ps, "w"), *t = fopen(pt, "w");
    assert_non_null(s);
    assert_non_null(t);
    ref_rng r = ref_rng_new(seed);
    const uint64_t span = (uint64_t)(max_words - min_words + 1);
    for (int i = 0; i < lines; i++) {
        int n = min_words + (int)(ref_rng_next(&r) % span), w[8];
        for (int k = 0; k < n; k++) w[k] = (int)(ref_rng_next(&r) % 8);
        for (int k = 0; k < n; k++) fprintf(s, "%s%s", k ? " " : "", src_words[w[k]]);
        for (int k = n - 1; k >= 0; k--) fprintf(t, "%s%s", k < n - 1 ? " " : "", tgt_words[w[k]]);
        fputc('\n', s);
        fputc('\n', t);
    }
    fclose(s);
    fclose(t);
}

/* the profile's word for "a simulator": its times (and sizes) mean little */
bool harness_is_slow(void) { return current && !current->device_profile.timings_meaningful; }

void harness_assert_ok(clformer_status st, const char *expr, const char *file, int line)
{
    if (st != CLFORMER_OK)
        harness_fail_at(file, line, "%s failed: %s: %s", expr, clformer_status_name(st),
                  clformer_last_error());
}

void harness_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s\n", msg);
    _fail(file, line);
}

static int run_on(const char *selector, const char *suite, const struct CMUnitTest *tests,
                  size_t n)
{
    clformer_status st = cf_context_create(selector, false, &current);
    if (st != CLFORMER_OK) {
        fprintf(stderr, "[  ERROR   ] cannot open device '%s': %s\n", selector,
                clformer_last_error());
        return 1;
    }
    char name[512];
    snprintf(name, sizeof name, "%s on %s (%s)", suite, current->info.name, selector);
    int failures = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    clformer_context_free(current);
    current = NULL;
    return failures;
}

int harness_run_device_suite(const char *suite, const struct CMUnitTest *tests, size_t n)
{
    const char *env = getenv("CLFORMER_TEST_DEVICES");
    int failures = 0, devices = 0;
    const char *filter = getenv("CLFORMER_TEST_FILTER"); /* e.g. "gemm_*" */
    if (filter && *filter) cmocka_set_test_filter(filter);
    if (env && *env) {
        char *list = strdup(env), *save = NULL;
        for (char *sel = strtok_r(list, ";", &save); sel; sel = strtok_r(NULL, ";", &save)) {
            failures += run_on(sel, suite, tests, n);
            devices++;
        }
        free(list);
    } else {
        clformer_device_info *devs = NULL;
        size_t count = 0;
        if (clformer_list_devices(&devs, &count) != CLFORMER_OK) count = 0;
        for (size_t i = 0; i < count; i++, devices++)
            failures += run_on(devs[i].selector, suite, tests, n);
        free(devs);
    }
    if (devices == 0) {
        fprintf(stderr, "[  ERROR   ] no OpenCL device to test on (CLFORMER_TEST_DEVICES=%s)\n",
                env ? env : "(unset)");
        return 1;
    }
    return failures;
}

void *hmalloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) fail_msg("out of host memory (%zu bytes)", bytes);
    return p;
}

double *to_double(const float *x, size_t n)
{
    double *d = hmalloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static hbuf hbuf_alloc(size_t n, size_t off)
{
    hbuf b = {NULL, off, n};
    assert_ok(cf_buffer_alloc(current, off + n + HARNESS_CANARY, "test tensor", &b.mem));
    assert_ok(cf_fill_u32(current, b.mem, 0, off, CANARY_BITS));
    assert_ok(cf_fill_u32(current, b.mem, off + n, HARNESS_CANARY, CANARY_BITS));
    return b;
}

hbuf hbuf_zeros(size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_fill(current, b.mem, off, n, 0.0f));
    return b;
}

hbuf hbuf_from_f32(const float *host, size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_upload(current, b.mem, off, host, n));
    return b;
}

hbuf hbuf_from_i32(const int32_t *host, size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_upload(current, b.mem, off, host, n));
    return b;
}

void hbuf_read(hbuf b, void *host) { assert_ok(cf_download(current, b.mem, b.off, host, b.n)); }

void harness_check_canary(hbuf b, const char *name, const char *file, int line)
{
    size_t total = b.off + b.n + HARNESS_CANARY;
    uint32_t *all = hmalloc(total * 4);
    assert_ok(cf_download(current, b.mem, 0, all, total));
    for (size_t i = 0; i < total; i++) {
        if (i >= b.off && i < b.off + b.n) continue;
        if (all[i] != CANARY_BITS) {
            long rel = i < b.off ? (long)i - (long)b.off : (long)(i - b.off - b.n);
            free(all);
            harness_fail_at(file, line, "%s: guard element %s%ld %s the tensor was overwritten", name,
                      i < b.off ? "" : "+", rel, i < b.off ? "before" : "after");
        }
    }
    free(all);
}

void hbuf_free(hbuf b) { cf_buffer_free(current, b.mem); }

/* What a failing comparison found, for messages. */
static void describe_cmp(char *buf, size_t cap, ref_cmp r)
{
    snprintf(buf, cap,
             "%s: worst element %zu = %.9g, reference %.9g, allowed |err| <= %.3g; "
             "max abs err %.3g, max rel err %.3g, nmse %.3g",
             r.why, r.worst, r.worst_value, r.worst_ref, r.worst_bound, r.max_abs_err,
             r.max_rel_err, r.nmse);
}

void harness_assert_cmp(ref_cmp r, const char *what, const char *file, int line)
{
    if (r.pass) return;
    char msg[1024];
    describe_cmp(msg, sizeof msg, r);
    harness_fail_at(file, line, "%s: %s", what, msg);
}

void harness_conf_sink(void *user, const conf_result *r)
{
    if (r->cmp.pass) return;
    char msg[1024];
    describe_cmp(msg, sizeof msg, r->cmp);
    print_error("%s %s: %s\n", r->op, r->shape, msg);
    ++*(int *)user;
}

void harness_assert_conformance(conf_check_fn check, const char *name, const char *file, int line)
{
    int failures = 0;
    harness_assert_ok(check(current, harness_is_slow(), harness_conf_sink, &failures), name,
                      file, line);
    if (failures)
        harness_fail_at(file, line, "%s: %d result(s) outside their rule (listed above)", name,
                        failures);
}

/* --- the clformer binary ------------------------------------------------------ */

/* environ with CLFORMER_DEVICE set to the device under test (if any); built
 * before fork, since the OpenCL runtime's threads leave the child only
 * async-signal-safe calls. The caller frees the array and *device_entry. */
static char **child_env(char **device_entry)
{
    size_t n = 0;
    while (environ[n]) n++;
    char **env = hmalloc((n + 2) * sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CLFORMER_DEVICE=", 16) != 0) env[k++] = environ[i];
    *device_entry = NULL;
    if (current) {
        const char *sel = current->info.selector;
        *device_entry = hmalloc(strlen("CLFORMER_DEVICE=") + strlen(sel) + 1);
        sprintf(*device_entry, "CLFORMER_DEVICE=%s", sel);
        env[k++] = *device_entry;
    }
    env[k] = NULL;
    return env;
}

/* Reads all of `f` from its start into buf (cut to cap - 1 bytes), copying
 * it to our stderr when `echo`. */
static void read_capture(FILE *f, char *buf, size_t cap, bool echo)
{
    size_t len = 0;
    char chunk[4096];
    bool echoed = false;
    rewind(f);
    for (size_t got; (got = fread(chunk, 1, sizeof chunk, f)) > 0;) {
        if (echo) {
            if (!echoed) fputs("[ clformer ] ", stderr);
            fwrite(chunk, 1, got, stderr);
            echoed = true;
        }
        size_t take = got < cap - 1 - len ? got : cap - 1 - len;
        memcpy(buf + len, chunk, take);
        len += take;
    }
    buf[len] = '\0';
}

/* In the child, after fork: say why it cannot run the tool, and exit. */
static void child_fail(const char *msg)
{
    ssize_t ignored = write(2, msg, strlen(msg));
    (void)ignored;
    _exit(127);
}

int harness_run_clformer_argv(const harness_cmd *cmd, const char *const *args)
{
    const char *binary = getenv("CLFORMER_BINARY");
    if (!binary || !*binary) fail_msg("CLFORMER_BINARY is not set (run through ctest)");
    assert_true(cmd->out && cmd->out_cap > 0 && (!cmd->err || cmd->err_cap > 0));
    size_t n = 0;
    while (args[n]) n++;
    char **argv = hmalloc((n + 2) * sizeof *argv);
    argv[0] = (char *)binary;
    for (size_t i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    argv[n + 1] = NULL;
    char *device_entry;
    char **env = child_env(&device_entry);
    FILE *out = tmpfile(), *err = cmd->err ? tmpfile() : NULL;
    if (!out || (cmd->err && !err)) fail_msg("tmpfile: %s", strerror(errno));
    const int o = fileno(out), e = err ? fileno(err) : o;
    fcntl(o, F_SETFD, FD_CLOEXEC); /* the child keeps only its dup2 copies */
    fcntl(e, F_SETFD, FD_CLOEXEC);

    fflush(NULL); /* or the child would write our buffered output again */
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        if (dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
        int i = open(cmd->in ? cmd->in : "/dev/null", O_RDONLY | O_CLOEXEC);
        if (i < 0 || dup2(i, 0) < 0) child_fail("harness: cannot open the child's stdin\n");
        if (cmd->cwd && chdir(cmd->cwd) != 0)
            child_fail("harness: cannot change to the child's directory\n");
        execve(binary, argv, env);
        child_fail("harness: cannot execute $CLFORMER_BINARY\n");
    }
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    assert_int_equal(w, pid);
    free(argv);
    free(env);
    free(device_entry);

    /* On a simulator the child's Oclgrind reports must reach check_log.cmake,
     * whichever buffer holds them: echo its stderr (or merged output). */
    const bool simulator = harness_is_slow();
    read_capture(out, cmd->out, cmd->out_cap, simulator && !err);
    fclose(out);
    if (err) {
        read_capture(err, cmd->err, cmd->err_cap, cmd->echo_err || simulator);
        fclose(err);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int harness_vrun_clformer(const harness_cmd *cmd, const char *first, va_list args)
{
    va_list count;
    va_copy(count, args);
    size_t n = 0;
    for (const char *a = first; a; a = va_arg(count, const char *)) n++;
    va_end(count);
    const char **argv = hmalloc((n + 1) * sizeof *argv);
    argv[0] = first;
    for (size_t i = 1; i < n; i++) argv[i] = va_arg(args, const char *);
    argv[n] = NULL;
    int rc = harness_run_clformer_argv(cmd, argv);
    free(argv);
    return rc;
}

int harness_run_clformer(const harness_cmd *cmd, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    int rc = harness_vrun_clformer(cmd, first, ap);
    va_end(ap);
    return rc;
}

void harness_expect_run(const harness_cmd *cmd, int got, int want, const char *needle)
{
    const char *err = cmd->err ? cmd->err : "(in stdout)";
    if (got != want)
        fail_msg("exit code %d, expected %d\nstdout: %s\nstderr: %s", got, want, cmd->out, err);
    if (needle && !strstr(cmd->out, needle) && !(cmd->err && strstr(cmd->err, needle)))
        fail_msg("the output does not mention '%s'\nstdout: %s\nstderr: %s", needle, cmd->out,
                 err);
}

/* --- files -------------------------------------------------------------------- */

bool harness_temp_dir(char *dir, size_t cap, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, cap, "%s/clformer_%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    return n > 0 && (size_t)n < cap && mkdtemp(dir);
}

bool harness_remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return false;
    bool ok = true;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return false;
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[4096];
            int n = snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            ok = n > 0 && (size_t)n < sizeof child && harness_remove_tree(child) && ok;
        }
        closedir(d);
    }
    return remove(path) == 0 && ok;
}

void harness_path(char *buf, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) fail_msg("path %s/%s is longer than %zu bytes", dir, name, cap);
}

size_t harness_slurp_bytes(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, cap - 1, f);
    const bool whole = fgetc(f) == EOF && !ferror(f);
    fclose(f);
    buf[n] = '\0';
    if (!whole) fail_msg("%s: could not read it whole into %zu bytes", path, cap);
    return n;
}

void harness_slurp(const char *path, char *buf, size_t cap) { harness_slurp_bytes(path, buf, cap); }

void harness_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s: %s", path, strerror(errno));
    const bool ok = fwrite(data, 1, n, f) == n;
    if (fclose(f) != 0 || !ok) fail_msg("cannot write %s", path);
}

void harness_write_counted_lines(const char *path, size_t bytes, const char *word,
                                 const char *text, int period)
{
    char *corpus = hmalloc(bytes);
    size_t at = 0;
    corpus[0] = '\0';
    for (int i = 0; at + 40 < bytes; i++)
        at += (size_t)snprintf(corpus + at, bytes - at, "%s %d: %s %d\n", word, i, text,
                               i % period);
    harness_write_file(path, corpus);
    free(corpus);
}

void harness_write_file(const char *path, const char *text)
{
    harness_write_bytes(path, text, strlen(text));
}

int32_t *harness_random_sentences(size_t rows, size_t len, int vocab, uint64_t seed)
{
    ref_rng r = ref_rng_new(seed);
    int32_t *ids = hmalloc(rows * len * sizeof *ids);
    for (size_t b = 0; b < rows; b++) {
        size_t n = 3 + (size_t)(ref_rng_next(&r) % (len - 2));
        for (size_t i = 0; i < len; i++)
            ids[b * len + i] = i == 0 ? CLFORMER_SOS : i == n - 1 ? CLFORMER_EOS
                             : i >= n ? CLFORMER_PAD
                                      : 4 + (int32_t)(ref_rng_next(&r) % (uint64_t)(vocab - 4));
    }
    return ids;
}
