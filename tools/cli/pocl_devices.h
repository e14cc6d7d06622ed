/*
 * PoCL's basic device for selectors that name it. PoCL shows only its
 * pthread device unless POCL_DEVICES says otherwise (read when the first
 * OpenCL call loads it), so CLFORMER_DEVICE=pocl:basic alone would match
 * nothing: a selector naming "basic" turns both PoCL CPU devices on when
 * POCL_DEVICES is unset, as the test suite's "pthread basic" does (so P:D
 * indices are those). An explicit POCL_DEVICES is left as it is.
 */
#ifndef CLI_POCL_DEVICES_H
#define CLI_POCL_DEVICES_H

#include <stdbool.h>

/* Sets POCL_DEVICES for CLFORMER_DEVICE; before the first OpenCL call. */
void pocl_devices_for_selector(void);

/* Whether `clformer` started with CLFORMER_DEVICE=selector (the rest of the
 * environment as this process found it) lists the devices this process
 * lists: it does unless the two differ in turning PoCL's basic device on. */
bool pocl_devices_same_list(const char *selector);

#endif
