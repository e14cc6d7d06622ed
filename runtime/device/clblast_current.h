/*
 * The parameters CLBlast uses now for one of its kernels on a device, in
 * single precision: its database's choice for that device, or whatever was
 * last handed to CLBlastOverrideParameters. CLBlast's C API has no getter
 * (only C++'s clblast::RetrieveParameters), so clblast_current.cc wraps it.
 */
#ifndef CF_CLBLAST_CURRENT_H
#define CF_CLBLAST_CURRENT_H

#include "context.h"

/* "NAME=value NAME=value ..." in name order into `out` (`cap` bytes), as
 * cf_clblast_override takes it. Fails with CLBlast's status on an unknown
 * kernel or when the text does not fit. */
clformer_status cf_clblast_current(cl_device_id device, const char *kernel, char *out,
                                   size_t cap);

#endif
