/*
 * The device profile (clformer_device_profile in include/clformer.h): made
 * once per context by profile.c; everything else reads ctx->device_profile
 * instead of asking what kind of device it runs on.
 */
#ifndef CF_PROFILE_H
#define CF_PROFILE_H

#include "status.h"

/* What kind of device `d` is (simulators apart from the CPUs they run on). */
clformer_device_kind cf_device_kind(const clformer_device_info *d);

/* The default selection's preference, lower first: discrete GPU, integrated
 * GPU, accelerator, CPU, anything else, simulators last. */
int cf_device_tier(const clformer_device_info *d);

#endif
