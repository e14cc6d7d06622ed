/* A command's files through the door (see cli_files.h). */
#include "cli_files.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_files_begin(cli_files *f, const char *command, bool overwrite)
{
    f->command = command;
    f->overwrite = overwrite;
    f->door = NULL;
    if (clformer_door_create(&f->door) != CLFORMER_OK) {
        cli_runtime_error(command, NULL);
        return false;
    }
    clformer_door_set_hint(f->door, "or add --overwrite to replace it");
    return true;
}

bool cli_files_read(cli_files *f, const char *what, const char *path)
{
    if (clformer_door_read(f->door, what, path) == CLFORMER_OK) return true;
    cli_runtime_error(f->command, NULL);
    return false;
}

bool cli_files_write(cli_files *f, const char *what, const char *path, unsigned flags)
{
    if (f->overwrite) flags |= CLFORMER_WRITE_REPLACE;
    if (clformer_door_write(f->door, what, path, flags) == CLFORMER_OK) return true;
    cli_runtime_error(f->command, NULL);
    return false;
}

static void list_files(const clformer_door *door)
{
    static const struct {
        unsigned flag;
        const char *name;
    } names[] = {{CLFORMER_WRITE_REPLACE, "replace"}, {CLFORMER_WRITE_STREAM, "stream"},
                 {CLFORMER_WRITE_DIRECTORY, "directory"}, {CLFORMER_WRITE_LOCKED, "locked"},
                 {CLFORMER_WRITE_APPEND, "append"}, {CLFORMER_WRITE_LOCK_FILE, "lock-file"}};
    const char *what, *path;
    bool output;
    unsigned flags;
    for (size_t i = 0; clformer_door_entry(door, i, &what, &path, &output, &flags); i++) {
        printf("%s\t%s\t%s\t", output ? "write" : "read", what, path);
        int any = 0;
        for (size_t k = 0; k < sizeof names / sizeof *names; k++)
            if (flags & names[k].flag) printf("%s%s", any++ ? "," : "", names[k].name);
        if (output && strchr(path, '*')) printf("%snumbered", any++ ? "," : "");
        printf("%s\n", any ? "" : "-");
    }
}

int cli_files_open(cli_files *f)
{
    const char *list = getenv("CLFORMER_LIST_FILES");
    if (list && *list && strcmp(list, "0")) {
        list_files(f->door);
        return 0;
    }
    const clformer_status st = clformer_door_open(f->door);
    if (st == CLFORMER_OK) return -1;
    cli_runtime_error(f->command, NULL);
    return st == CLFORMER_ERR_INVALID_ARGUMENT ? EXIT_USAGE : 1;
}

void cli_files_end(cli_files *f)
{
    clformer_door_free(f->door);
    f->door = NULL;
}

bool cli_files_unused(const char *command, const char *path, char *buf, size_t cap)
{
    if (clformer_path_unused(path, buf, cap) == CLFORMER_OK) return true;
    cli_runtime_error(command, NULL);
    return false;
}
