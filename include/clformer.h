/*
 * clformer: train and run the encoder-decoder Transformer on any OpenCL device.
 *
 * The public C API. Every object is an opaque handle with a create/free pair;
 * every function that can fail returns a clformer_status, and
 * clformer_last_error() gives the message of the last failure on this thread
 * (it names the problem and, where there is one, the fix).
 */
#ifndef CLFORMER_H
#define CLFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLFORMER_VERSION "0.1.0"

typedef enum {
    CLFORMER_OK = 0,
    CLFORMER_ERR_INVALID_ARGUMENT, /* bad user input: a config, a token id, a flag */
    CLFORMER_ERR_NO_DEVICE,        /* no OpenCL device, or a selector that matches none */
    CLFORMER_ERR_OPENCL,           /* an OpenCL call failed */
    CLFORMER_ERR_CLBLAST,          /* a CLBlast call failed */
    CLFORMER_ERR_BUILD,            /* a kernel did not compile (the message holds the log) */
    CLFORMER_ERR_OUT_OF_MEMORY,    /* device or host memory exhausted */
    CLFORMER_ERR_IO,               /* a file is missing, unreadable or unwritable */
    CLFORMER_ERR_FORMAT,           /* a file is malformed: checkpoint, corpus, cache */
    CLFORMER_ERR_INTERRUPTED       /* stopped on request (e.g. Ctrl-C) */
} clformer_status;

/* A short constant name for a status, e.g. "CLFORMER_ERR_IO". */
const char *clformer_status_name(clformer_status status);

/* The message of the last failure on the calling thread ("" if none). */
const char *clformer_last_error(void);

/* ------------------------------------------------------------------------- */
/* Devices                                                                    */
/* ------------------------------------------------------------------------- */

typedef enum {
    CLFORMER_DEVICE_CPU = 1,
    CLFORMER_DEVICE_GPU = 2,
    CLFORMER_DEVICE_ACCELERATOR = 4,
    CLFORMER_DEVICE_OTHER = 8
} clformer_device_type;

/* Everything clformer knows about one OpenCL device. Plain data, so that the
 * selection rule can be tested over a made-up list. */
typedef struct {
    int platform_index;
    int device_index;
    char selector[32]; /* "P:D", the index pair that names this device */
    char platform[128];
    char platform_version[128];
    char platform_vendor[128];
    char vendor[128];
    char name[256];
    char driver_version[128];
    char device_version[128]; /* "OpenCL 3.0 ..." */
    char c_version[128];      /* "OpenCL C 1.2 ..." */
    clformer_device_type type;
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t local_mem_bytes;
    uint64_t max_alloc_bytes;
    size_t max_work_group_size;
    bool fp16;
    bool fp64;
    bool unified_memory; /* host-unified memory: an integrated GPU or a CPU */
    bool simulator;      /* e.g. Oclgrind: chosen only when named */
} clformer_device_info;

/* Lists every device of every platform. Free the array with free(). */
clformer_status clformer_list_devices(clformer_device_info **devices, size_t *count);

/*
 * Chooses a device by the CLFORMER_DEVICE grammar (pure function, no OpenCL):
 *   NULL or ""           the best GPU (discrete first, then compute units x
 *                        clock), else an accelerator, else a CPU; a simulator
 *                        only when it is the only device
 *   "P:D"                platform and device indices
 *   "gpu" "cpu" "accelerator"   the best device of that type
 *   "text" or "a:b"      case-insensitive substrings: "text" of the platform,
 *                        vendors or device name; "a" of the platform or vendors
 *                        and "b" of the device name or type ("intel:gpu",
 *                        "pocl:pthread", "oclgrind")
 * A selector that matches nothing is CLFORMER_ERR_NO_DEVICE with a message
 * that names it and lists the devices that exist.
 */
clformer_status clformer_select_device(const clformer_device_info *devices, size_t count,
                                       const char *selector, size_t *index);

/* ------------------------------------------------------------------------- */
/* Context: one device, its queue, its compiled programs                     */
/* ------------------------------------------------------------------------- */

typedef struct clformer_context clformer_context;

/* Opens the device chosen by `selector` (NULL: the CLFORMER_DEVICE variable). */
clformer_status clformer_context_create(const char *selector, clformer_context **ctx);
void clformer_context_free(clformer_context *ctx);
const clformer_device_info *clformer_context_device(const clformer_context *ctx);

/* Kernel program cache counters, for tests and `clformer bench`. */
typedef struct {
    unsigned memory_hits; /* served from this context's in-memory table */
    unsigned disk_hits;   /* loaded from the on-disk binary cache */
    unsigned builds;      /* compiled from source */
    unsigned disk_rejects;/* cache files found corrupt or stale and rebuilt */
} clformer_program_stats;
clformer_program_stats clformer_context_program_stats(const clformer_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* CLFORMER_H */
