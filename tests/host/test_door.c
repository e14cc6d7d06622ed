/*
 * runtime/core/door.c, one rule at a time (docs/RELIABILITY.md): outputs
 * against inputs and each other through every spelling (symbolic and hard
 * links, ".."), non-regular files, existing files, files that appear after
 * the check, undeclared writes, short temp names, the signal handler's
 * removal, locks, numbered outputs and folders written whole. Each refusal
 * leaves every byte as it was.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "door.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    return harness_temp_dir(dir, sizeof dir, "door") ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

/* `name` in the test's folder (one of 8 buffers, reused in turn). */
static const char *at(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The file's text (static), or "" when it is not there. */
static const char *text_of(const char *path)
{
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    return buf;
}

/* How many entries the folder `d` holds. */
static size_t count_entries(const char *d)
{
    DIR *folder = opendir(d);
    size_t n = 0;
    for (struct dirent *e; folder && (e = readdir(folder)) != NULL;)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (folder) closedir(folder);
    return n;
}

/* A door of one input and one output, opened: its status; the door is freed. */
static clformer_status open_pair(const char *in, const char *out, unsigned flags)
{
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_read(d, "--in", in), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--out", out, flags), CLFORMER_OK);
    const clformer_status st = clformer_door_open(d);
    clformer_door_free(d);
    return st;
}

static void assert_refused(clformer_status st, clformer_status want, const char *needle)
{
    if (st != want || !strstr(clformer_last_error(), needle))
        fail_msg("expected %s with '%s', got %s: %s", clformer_status_name(want), needle,
                 clformer_status_name(st), clformer_last_error());
}

static void an_input_is_never_an_output(void **state)
{
    (void)state;
    put(at("in.txt"), "input");
    assert_int_equal(mkdir(at("sub"), 0755), 0);
    assert_int_equal(symlink("in.txt", at("link.txt")), 0);
    assert_int_equal(link(at("in.txt"), at("hard.txt")), 0);
    static const char *const spellings[] = {"in.txt", "link.txt", "hard.txt", "sub/../in.txt"};
    char in[512], out[512];
    snprintf(in, sizeof in, "%s", at("in.txt"));
    for (size_t i = 0; i < 4; i++) {
        snprintf(out, sizeof out, "%s", at(spellings[i]));
        assert_refused(open_pair(in, out, CLFORMER_WRITE_REPLACE),
                       CLFORMER_ERR_INVALID_ARGUMENT, "is the same file as the input --in");
        assert_string_equal(text_of(in), "input");
    }
    /* a link to a file still to be made is that file */
    assert_int_equal(symlink("new.txt", at("dangling.txt")), 0);
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--a", at("new.txt"), 0), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--b", at("dangling.txt"), 0), CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_INVALID_ARGUMENT,
                   "is also the output --b");
    clformer_door_free(d);
    /* an output inside an input folder */
    assert_refused(open_pair(at("sub"), at("sub/x.txt"), 0), CLFORMER_ERR_INVALID_ARGUMENT,
                   "is inside the input --in");
}

static void only_regular_files_unless_a_stream(void **state)
{
    (void)state;
    put(at("in2.txt"), "input");
    assert_int_equal(mkfifo(at("fifo"), 0644), 0);
    assert_refused(open_pair(at("in2.txt"), at("fifo"), CLFORMER_WRITE_REPLACE),
                   CLFORMER_ERR_INVALID_ARGUMENT, "is a FIFO: it is written to a regular file");
    /* a stream with no reader: refused at once, never waited for */
    assert_refused(open_pair(at("in2.txt"), at("fifo"), CLFORMER_WRITE_STREAM),
                   CLFORMER_ERR_INVALID_ARGUMENT, "is a FIFO with no reader");
    assert_refused(open_pair(at("in2.txt"), "/dev/null", CLFORMER_WRITE_REPLACE),
                   CLFORMER_ERR_INVALID_ARGUMENT, "is a character device");
    assert_int_equal(open_pair(at("in2.txt"), "/dev/null", CLFORMER_WRITE_STREAM), CLFORMER_OK);
    assert_refused(open_pair(at("in2.txt"), dir, CLFORMER_WRITE_REPLACE),
                   CLFORMER_ERR_INVALID_ARGUMENT, "is a folder");
    /* a missing folder is the machine's refusal (exit 1), not a usage error */
    assert_refused(open_pair(at("in2.txt"), at("none/out.txt"), 0), CLFORMER_ERR_IO,
                   "does not exist");
}

static void an_existing_file_is_replaced_only_when_asked(void **state)
{
    (void)state;
    put(at("old.txt"), "the user's");
    assert_refused(open_pair(at("in2.txt"), at("old.txt"), 0), CLFORMER_ERR_INVALID_ARGUMENT,
                   "exists and this run did not make it");
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--out", at("old.txt"), CLFORMER_WRITE_REPLACE),
                     CLFORMER_OK);
    assert_int_equal(clformer_door_open(d), CLFORMER_OK);
    assert_int_equal(cf_write_file_atomic(at("old.txt"), "new", 3), CLFORMER_OK);
    assert_string_equal(text_of(at("old.txt")), "new");
    /* a path the run did not declare is refused, and stays as it is */
    assert_refused(cf_write_file_atomic(at("in2.txt"), "x", 1), CLFORMER_ERR_INVALID_ARGUMENT,
                   "is not among the files this run declared");
    assert_string_equal(text_of(at("in2.txt")), "input");
    clformer_door_free(d);
}

static void a_file_that_appears_meanwhile_stays(void **state)
{
    (void)state;
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--out", at("race.txt"), 0), CLFORMER_OK);
    assert_int_equal(clformer_door_open(d), CLFORMER_OK);
    cf_atomic_file af;
    assert_int_equal(cf_atomic_open(&af, at("race.txt")), CLFORMER_OK);
    assert_int_equal(cf_atomic_write(&af, "ours", 4), CLFORMER_OK);
    put(at("race.txt"), "someone else's"); /* after the check, before the commit */
    assert_refused(cf_atomic_commit(&af), CLFORMER_ERR_INVALID_ARGUMENT,
                   "appeared while it was being written");
    assert_string_equal(text_of(at("race.txt")), "someone else's");
    /* the run's own file may be written again */
    unlink(at("race.txt"));
    assert_int_equal(cf_write_file_atomic(at("race.txt"), "1", 1), CLFORMER_OK);
    assert_int_equal(cf_write_file_atomic(at("race.txt"), "2", 1), CLFORMER_OK);
    assert_string_equal(text_of(at("race.txt")), "2");
    clformer_door_free(d);
}

static void temp_names_are_short_and_removed(void **state)
{
    (void)state;
    char name[241];
    memset(name, 'n', 240);
    name[240] = '\0';
    const size_t before = count_entries(dir);
    cf_door_call call = {NULL};
    assert_int_equal(cf_door_call_begin(&call, "the input", NULL, 0, "the output", at(name), 0),
                     CLFORMER_OK);
    cf_atomic_file af;
    assert_int_equal(cf_atomic_open(&af, at(name)), CLFORMER_OK);
    assert_non_null(strstr(af.temp_path, ".tmp."));
    assert_true(strlen(strrchr(af.temp_path, '/') + 1) < 130);
    assert_int_equal(count_entries(dir), before + 1);
    clformer_door_remove_temps(); /* what a SIGINT handler calls */
    assert_int_equal(count_entries(dir), before);
    cf_atomic_abort(&af);
    assert_int_equal(cf_write_file_atomic(at(name), "long name", 9), CLFORMER_OK);
    assert_string_equal(text_of(at(name)), "long name");
    cf_door_call_end(&call);
    assert_int_equal(count_entries(dir), before + 1);
}

/* In a child: holds a door locking `path` until killed. */
static pid_t hold_lock(const char *path)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        clformer_door *d;
        if (clformer_door_create(&d) != CLFORMER_OK ||
            clformer_door_write(d, "--save", path, CLFORMER_WRITE_LOCKED) != CLFORMER_OK ||
            clformer_door_open(d) != CLFORMER_OK)
            _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c;
    close(ready[1]);
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    return child;
}

static void locks_follow_links_and_keep_the_users_files(void **state)
{
    (void)state;
    assert_int_equal(symlink("s.safetensors", at("sl.safetensors")), 0);
    const pid_t holder = hold_lock(at("s.safetensors"));
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--save", at("sl.safetensors"), CLFORMER_WRITE_LOCKED),
                     CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_IO, "another run is writing");
    clformer_door_free(d);
    kill(holder, SIGTERM);
    int status;
    waitpid(holder, &status, 0);
    /* a user's file where the lock would be: refused, never replaced or removed */
    put(at("u.safetensors.lock"), "notes");
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--save", at("u.safetensors"), CLFORMER_WRITE_LOCKED),
                     CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_INVALID_ARGUMENT,
                   "is not a clformer lock file");
    clformer_door_free(d);
    assert_string_equal(text_of(at("u.safetensors.lock")), "notes");
    /* ... nor when it is an input */
    put(at("q.safetensors.lock"), "input");
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_read(d, "--src", at("q.safetensors.lock")), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--save", at("q.safetensors"), CLFORMER_WRITE_LOCKED),
                     CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_INVALID_ARGUMENT,
                   "the lock file of --save");
    clformer_door_free(d);
    assert_string_equal(text_of(at("q.safetensors.lock")), "input");
    /* a lock taken and released leaves nothing */
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--save", at("v.safetensors"), CLFORMER_WRITE_LOCKED),
                     CLFORMER_OK);
    assert_int_equal(clformer_door_open(d), CLFORMER_OK);
    assert_int_equal(access(at("v.safetensors.lock"), F_OK), 0);
    clformer_door_free(d);
    assert_int_not_equal(access(at("v.safetensors.lock"), F_OK), 0);
}

static bool owned_by_marker(const char *path, void *user)
{
    return !strcmp(text_of(path), user);
}

static void numbered_outputs_remove_only_their_own(void **state)
{
    (void)state;
    put(at("k.step2.safetensors"), "a text file");
    put(at("k.step4.safetensors"), "run-a");
    const cf_door_output_spec own = {CF_WRITE_NUMBERED, NULL, owned_by_marker, strdup("run-a")};
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(cf_door_output(d, "--keep-last", at("k.step*.safetensors"), &own),
                     CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_INVALID_ARGUMENT,
                   "k.step2.safetensors' exists and is not this run's");
    clformer_door_free(d);
    unlink(at("k.step2.safetensors"));
    /* an input with a numbered name */
    put(at("k.step8.safetensors"), "input");
    const cf_door_output_spec own2 = {CF_WRITE_NUMBERED, NULL, owned_by_marker, strdup("run-a")};
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_read(d, "--src", at("k.step8.safetensors")), CLFORMER_OK);
    assert_int_equal(cf_door_output(d, "--keep-last", at("k.step*.safetensors"), &own2),
                     CLFORMER_OK);
    assert_refused(clformer_door_open(d), CLFORMER_ERR_INVALID_ARGUMENT,
                   "would write the input --src");
    clformer_door_free(d);
    unlink(at("k.step8.safetensors"));
    /* the run's own (by its owner) and what it made may go; nothing else */
    const cf_door_output_spec own3 = {CF_WRITE_NUMBERED, NULL, owned_by_marker, strdup("run-a")};
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(cf_door_output(d, "--keep-last", at("k.step*.safetensors"), &own3),
                     CLFORMER_OK);
    assert_int_equal(clformer_door_open(d), CLFORMER_OK);
    assert_int_equal(cf_write_file_atomic(at("k.step6.safetensors"), "made", 4), CLFORMER_OK);
    put(at("k.step9.safetensors"), "another run's"); /* appeared during the run */
    assert_true(cf_door_owns(at("k.step4.safetensors")));
    assert_true(cf_door_owns(at("k.step6.safetensors")));
    assert_false(cf_door_owns(at("k.step9.safetensors")));
    assert_refused(cf_door_remove(at("k.step9.safetensors")), CLFORMER_ERR_INVALID_ARGUMENT,
                   "is not this run's");
    assert_int_equal(cf_door_remove(at("k.step4.safetensors")), CLFORMER_OK);
    assert_int_equal(cf_door_remove(at("k.step6.safetensors")), CLFORMER_OK);
    assert_string_equal(text_of(at("k.step9.safetensors")), "another run's");
    clformer_door_free(d);
}

/* One export into `out`: model.safetensors and the tokenizer file `name`. */
static clformer_status export_into(const char *out, unsigned flags, const char *name)
{
    clformer_door *d;
    assert_int_equal(clformer_door_create(&d), CLFORMER_OK);
    assert_int_equal(clformer_door_write(d, "--out", out, CLFORMER_WRITE_DIRECTORY | flags),
                     CLFORMER_OK);
    clformer_status st = clformer_door_open(d);
    cf_dir_output dout;
    char path[512];
    if (st == CLFORMER_OK) st = cf_dir_output_begin(&dout, out);
    if (st == CLFORMER_OK) {
        assert_int_equal(cf_dir_output_file(&dout, "model.safetensors", path, sizeof path),
                         CLFORMER_OK);
        assert_int_equal(cf_write_file_atomic(path, "weights", 7), CLFORMER_OK);
        assert_int_equal(cf_dir_output_file(&dout, name, path, sizeof path), CLFORMER_OK);
        assert_int_equal(cf_write_file_atomic(path, "tokens", 6), CLFORMER_OK);
        st = cf_dir_output_commit(&dout);
    }
    clformer_door_free(d);
    return st;
}

static void folders_are_written_whole(void **state)
{
    (void)state;
    const size_t before = count_entries(dir);
    assert_int_equal(export_into(at("hf"), 0, "vocab.json"), CLFORMER_OK);
    assert_int_equal(count_entries(at("hf")), 2);
    assert_int_equal(count_entries(dir), before + 1); /* no temp folder left */
    /* an earlier export is replaced only when asked, and none of it survives */
    assert_refused(export_into(at("hf"), 0, "clformer_vocab.json"),
                   CLFORMER_ERR_INVALID_ARGUMENT, "exists and this run did not make it");
    assert_int_equal(export_into(at("hf"), CLFORMER_WRITE_REPLACE, "clformer_vocab.json"),
                     CLFORMER_OK);
    assert_int_equal(count_entries(at("hf")), 2);
    assert_int_not_equal(access(at("hf/vocab.json"), F_OK), 0);
    assert_int_equal(count_entries(dir), before + 1);
    /* a folder of the user's files is never replaced */
    put(at("hf/README"), "the user's");
    assert_refused(export_into(at("hf"), CLFORMER_WRITE_REPLACE, "vocab.json"),
                   CLFORMER_ERR_INVALID_ARGUMENT, "holds files clformer does not write");
    assert_string_equal(text_of(at("hf/README")), "the user's");
}

static void unused_paths_never_name_an_existing_file(void **state)
{
    (void)state;
    char buf[512];
    assert_int_equal(clformer_path_unused(at("free.safetensors"), buf, sizeof buf), CLFORMER_OK);
    assert_string_equal(buf, at("free.safetensors"));
    put(at("m.safetensors"), "1");
    put(at("m-2.safetensors"), "2");
    assert_int_equal(clformer_path_unused(at("m.safetensors"), buf, sizeof buf), CLFORMER_OK);
    assert_string_equal(buf, at("m-3.safetensors"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_input_is_never_an_output),
        cmocka_unit_test(only_regular_files_unless_a_stream),
        cmocka_unit_test(an_existing_file_is_replaced_only_when_asked),
        cmocka_unit_test(a_file_that_appears_meanwhile_stays),
        cmocka_unit_test(temp_names_are_short_and_removed),
        cmocka_unit_test(locks_follow_links_and_keep_the_users_files),
        cmocka_unit_test(numbered_outputs_remove_only_their_own),
        cmocka_unit_test(folders_are_written_whole),
        cmocka_unit_test(unused_paths_never_name_an_existing_file),
    };
    return cmocka_run_group_tests_name("door", tests, make_dir, remove_dir);
}
