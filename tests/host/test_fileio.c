/*
 * runtime/core: crash-safe writes leave no stale temp files behind (a save
 * after a kill -9 removes the dead process's temp file, never a live one's),
 * opening a door creates and removes the real temp file, and CRC-32C
 * matches its definition.
 */
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crc32c.h"
#include "door.h"
#include "fileio.h"

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    return harness_temp_dir(tmpdir, sizeof tmpdir, "fileio") ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    return harness_remove_tree(tmpdir) ? 0 : -1;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void touch(const char *path)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("partial", fp);
    fclose(fp);
}

/* The pid of a process that has exited and been reaped. */
static long dead_pid(void)
{
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) _exit(0);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    return (long)child;
}

static void save_removes_dead_processes_temp_files(void **state)
{
    (void)state;
    char target[128], dead[160], live[160], other[160];
    snprintf(target, sizeof target, "%s/model.safetensors", tmpdir);
    snprintf(dead, sizeof dead, "%s.tmp.%ld", target, dead_pid());
    snprintf(live, sizeof live, "%s.tmp.%ld", target, (long)getppid()); /* alive: our parent */
    snprintf(other, sizeof other, "%s/other.safetensors.tmp.%ld", tmpdir, dead_pid());
    touch(dead);
    touch(live);
    touch(other);
    assert_int_equal(cf_write_file_atomic(target, "new", 3), CLFORMER_OK);
    assert_true(exists(target));
    assert_false(exists(dead));  /* a kill -9's leftover of this target: removed */
    assert_true(exists(live));   /* a running process's temp file: kept */
    assert_true(exists(other));  /* another target's: not ours to judge */
    remove(live);
    remove(other);
}

/* Opening a door tries each output's folder with the very temp file a
 * write will use, and leaves nothing behind. */
static void opening_tries_and_removes_the_real_temp_file(void **state)
{
    (void)state;
    char target[128];
    snprintf(target, sizeof target, "%s/out.txt", tmpdir);
    clformer_door *door;
    assert_int_equal(clformer_door_create(&door), CLFORMER_OK);
    assert_int_equal(clformer_door_write(door, "--out", target, 0), CLFORMER_OK);
    assert_int_equal(clformer_door_open(door), CLFORMER_OK);
    clformer_door_free(door);
    assert_false(exists(target));
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) assert_null(strstr(e->d_name, "out.txt"));
    closedir(d);
    /* a directory that exists but takes no files, and a directory as target */
    assert_int_equal(clformer_door_create(&door), CLFORMER_OK);
    assert_int_equal(clformer_door_write(door, "--out", "/proc/clformer-test.safetensors", 0),
                     CLFORMER_OK);
    assert_int_equal(clformer_door_open(door), CLFORMER_ERR_IO);
    assert_non_null(strstr(clformer_last_error(), "cannot write in the folder '/proc'"));
    clformer_door_free(door);
    assert_int_equal(clformer_door_create(&door), CLFORMER_OK);
    assert_int_equal(clformer_door_write(door, "--out", tmpdir, 0), CLFORMER_OK);
    assert_int_equal(clformer_door_open(door), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "is a folder"));
    clformer_door_free(door);
}

/* The bit-at-a-time definition the table version must match. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
}

static void crc32c_matches_its_definition(void **state)
{
    (void)state;
    assert_int_equal(cf_crc32c(0, "123456789", 9), 0xe3069283u); /* the standard check value */
    assert_int_equal(cf_crc32c(0, "", 0), 0);
    unsigned char buf[1000];
    uint64_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(x >> 56);
    }
    for (size_t n = 0; n <= 40; n++) /* every tail length and alignment */
        for (size_t off = 0; off < 8; off++)
            assert_int_equal(cf_crc32c(0, buf + off, n), crc32c_bitwise(buf + off, n));
    assert_int_equal(cf_crc32c(cf_crc32c(0, buf, 333), buf + 333, 667),
                     crc32c_bitwise(buf, sizeof buf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(save_removes_dead_processes_temp_files),
        cmocka_unit_test(opening_tries_and_removes_the_real_temp_file),
        cmocka_unit_test(crc32c_matches_its_definition),
    };
    return cmocka_run_group_tests_name("fileio", tests, make_tmpdir, remove_tmpdir);
}
