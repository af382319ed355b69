/* The devices there are, in `clnorm devices` order, and the device specs of API.md
   (devices.c). */
#ifndef CLNORM_DEVICES_H
#define CLNORM_DEVICES_H

#include "types.h"

/* A device and where it is listed: platform pi, its device di ("pi:di"). */
typedef struct cln_device_ref {
    cl_platform_id platform;
    cl_device_id device;
    unsigned pi, di;
} cln_device_ref;

/* Resolves a spec as API.md says; NULL spec means $CLNORM_DEVICE or first GPU/first. */
CLN_HIDDEN clnorm_status cln_device_find(const char *spec, cln_device_ref *out);
/* Lists up to cap devices, platforms then their devices; *n receives the total. */
CLN_HIDDEN clnorm_status cln_device_list(cln_device_ref *out, size_t cap, size_t *n);

#endif
