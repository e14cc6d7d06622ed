/*
 * The door: every file clformer writes goes through it (SQLite's journal and
 * git's lock files are the models; docs/RELIABILITY.md is the user's view).
 *
 * A run (a command, a trainer, one public call) declares every path it
 * reads and every path it will write, then opens its door before writing
 * anything. Opening resolves each path to the file it reaches (symbolic
 * links, hard links, "..", existing or not: real_path.h) and refuses, in
 * one line, an output that is an input, another output, a directory, FIFO
 * or device (unless declared a stream), or a file that exists and that the
 * run did not make (unless the user asked to replace it). It takes the
 * locks of locked outputs, and becomes the calling thread's current door:
 * every write below (cf_atomic_open, cf_door_stream_open, cf_dir_output_*,
 * cf_door_remove) looks its path up there, so a write nobody declared is
 * refused too, and a file that appeared after the check is not replaced.
 *
 * The public half is clformer_door_* (clformer.h); this header adds what
 * the library's own writers need: owners of numbered files (the trainer's
 * snapshots), an input an output may replace (--resume), directory outputs
 * and in-place streams.
 */
#ifndef CF_DOOR_H
#define CF_DOOR_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* An output whose file name holds one '*' standing for a step number
 * ("run.step*.safetensors"): the trainer's numbered snapshots. */
#define CF_WRITE_NUMBERED (1u << 16)

/* Whether an existing file at an output belongs to the run (a snapshot a
 * resumed run wrote earlier): it may then be replaced, and a numbered one
 * removed (cf_door_remove). */
typedef bool (*cf_door_owner)(const char *path, void *user);

/* How an output is written, beyond clformer_door_write's flags. */
typedef struct {
    unsigned flags;        /* CLFORMER_WRITE_* | CF_WRITE_NUMBERED */
    const char *replaces;  /* the `what` of an input this output may replace: it is read
                            * whole before (train --resume CKPT --save CKPT); NULL: none */
    cf_door_owner owner;   /* NULL: only the files this process made are the run's */
    void *owner_user;      /* freed (free()) with the door */
} cf_door_output_spec;

clformer_status cf_door_output(clformer_door *door, const char *what, const char *path,
                               const cf_door_output_spec *spec);

/* The door open on this thread (the innermost), or NULL. */
clformer_door *cf_door_current(void);

/* Makes an open door current on this thread again / no longer: a trainer's
 * own door is current only while the trainer works, not in between. */
void cf_door_enter(clformer_door *door);
void cf_door_leave(clformer_door *door);

/* A public call that writes (clformer_model_save, export, average): through
 * the door open on this thread when there is one, which must declare
 * `output`; else through a door of the call's own, declaring its inputs
 * (n of them, each named `input_what`) and the output (`output_what`,
 * `flags`, and CLFORMER_WRITE_REPLACE: the caller named it), opened here
 * and freed by cf_door_call_end. */
typedef struct {
    clformer_door *own;
} cf_door_call;
clformer_status cf_door_call_begin(cf_door_call *call, const char *input_what,
                                   const char *const *inputs, size_t n, const char *output_what,
                                   const char *output, unsigned flags);
void cf_door_call_end(cf_door_call *call);

/* --- writing --------------------------------------------------------------- */

/* A file being written: under a temp name beside it (short: a 240-byte
 * legal name still saves), recorded for the signal handler, and renamed
 * into place on commit (a file the run must not replace is linked into
 * place instead, which fails if one appeared meanwhile); or, for a declared
 * stream (a FIFO with a reader, a character device, /dev/stdout), written
 * in place. */
typedef struct {
    FILE *fp;
    char *path;      /* the file written: the real path (a symbolic link stays) */
    char *temp_path; /* NULL when written in place */
    bool in_place;
    int slot;        /* the temp's record (temp_files.h) */
    clformer_door *door, *own_door; /* own_door: made for this file alone (freed with it) */
    size_t entry;
} cf_atomic_file;

/* Opens `path` for an atomic write through the current door (or, with none,
 * a door of this file alone, as cf_door_call_begin makes). */
clformer_status cf_atomic_open(cf_atomic_file *af, const char *path);
clformer_status cf_atomic_write(cf_atomic_file *af, const void *data, size_t size);
/* Overwrites `size` bytes at `offset` of what was written so far. */
clformer_status cf_atomic_patch(cf_atomic_file *af, uint64_t offset, const void *data,
                                size_t size);
/* Flushes, fsyncs, puts the file in place, fsyncs the folder. */
clformer_status cf_atomic_commit(cf_atomic_file *af);
/* Removes the temp file; safe after a failed write or commit. */
void cf_atomic_abort(cf_atomic_file *af);
/* One-shot atomic write of a buffer. */
clformer_status cf_write_file_atomic(const char *path, const void *data, size_t size);

/* Opens a declared output that is written as it goes (a log): appended to
 * when declared CLFORMER_WRITE_APPEND, emptied when CLFORMER_WRITE_REPLACE,
 * else made anew; a declared stream in place. */
clformer_status cf_door_stream_open(const char *path, FILE **fp);

/* Removes a numbered output's file (the trainer's --keep-last) when it is
 * the run's own: made by this process, or its owner says so. Anything else
 * is refused (CLFORMER_ERR_INVALID_ARGUMENT) and stays. */
clformer_status cf_door_remove(const char *path);

/* True when the existing file `path`, a match of a numbered output, is the
 * run's own (see cf_door_remove). */
bool cf_door_owns(const char *path);

/* --- a directory as an output (export --format hf-gpt2) -------------------- */

/* The names a directory clformer writes may hold: a directory output may
 * replace a folder that holds these alone (with CLFORMER_WRITE_REPLACE). */
extern const char *const cf_export_dir_names[];

/* The files are written into a fresh folder beside the target and that
 * folder is renamed into place on commit, so no file of an earlier export
 * survives, and a half-written export never appears. */
typedef struct {
    char *path;      /* the directory (real path) */
    char *temp_path; /* the folder written now */
    int slot;
    clformer_door *door;
    size_t entry;
} cf_dir_output;

clformer_status cf_dir_output_begin(cf_dir_output *d, const char *path);
/* The path of `name` inside the folder being written (into buf); write it
 * with cf_atomic_open or cf_write_file_atomic. */
clformer_status cf_dir_output_file(const cf_dir_output *d, const char *name, char *buf,
                                   size_t cap);
clformer_status cf_dir_output_commit(cf_dir_output *d);
void cf_dir_output_abort(cf_dir_output *d);

/* --- files that are not the user's ---------------------------------------- */

/* The program cache and tuning files under $CLFORMER_CACHE_DIR: the
 * library's own, written atomically (temp, fsync, rename) but outside any
 * run's door. */
clformer_status cf_write_cache_file(const char *path, const void *data, size_t size);

#endif
