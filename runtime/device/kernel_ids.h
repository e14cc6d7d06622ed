/*
 * The kernels the ops launch, by id: each op looks its kernel up in the
 * context's table (one array read) instead of by name on every launch
 * (option string, program and kernel name comparisons). A table slot is
 * filled by cf_kernel on first use and cleared with the programs.
 */
#ifndef CF_KERNEL_IDS_H
#define CF_KERNEL_IDS_H

/* CF_KERNEL_LIST(X), generated from the kernels in cl/ by
 * cmake/kernel_list.cmake:
 * X(id, program, kernel, kinds) for cl/<program>.cl's kernel <kernel>, whose
 * id is the kernel's name in capitals (CF_K_LAYERNORM_FORWARD) and whose
 * kinds are one letter per argument (launch.h's CF_MEM ... CF_LOCAL). A new
 * kernel in a .cl file gets its id without any edit here. */
#include "kernel_list.h"

typedef enum {
#define CF_KERNEL_ENUM(id, program, kernel, kinds) CF_K_##id,
    CF_KERNEL_LIST(CF_KERNEL_ENUM)
#undef CF_KERNEL_ENUM
    CF_K_COUNT
} cf_kernel_id;

/* Each kernel's program, name and argument kinds, by id. */
extern const char *const cf_kernel_programs[CF_K_COUNT];
extern const char *const cf_kernel_names[CF_K_COUNT];
extern const char *const cf_kernel_kinds[CF_K_COUNT];
/* The id of cl/<program>.cl's kernel <kernel>, or CF_K_COUNT when the .cl
 * files have no such kernel. */
cf_kernel_id cf_kernel_find(const char *program, const char *kernel);

#endif
