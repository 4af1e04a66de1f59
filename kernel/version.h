/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_VERSION_H
#define SROCE_VERSION_H

#include <rdma/sroce-abi.h>

#define SROCE_VERSION_MAJOR 0
#define SROCE_VERSION_MINOR 1
#define SROCE_VERSION_PATCH 0

#define SROCE_STR(x) #x
#define SROCE_XSTR(x) SROCE_STR(x)
#define SROCE_VERSION SROCE_XSTR(SROCE_VERSION_MAJOR) "." \
		      SROCE_XSTR(SROCE_VERSION_MINOR) "." \
		      SROCE_XSTR(SROCE_VERSION_PATCH)

/* Reported as the device's firmware version, packed as sroce-abi.h says. */
#define SROCE_FW_VER SROCE_FW_VER_PACK(SROCE_VERSION_MAJOR, \
				       SROCE_VERSION_MINOR, \
				       SROCE_VERSION_PATCH)

/* Kbuild passes the git description when building from a checkout. */
#ifndef SROCE_GIT
#define SROCE_GIT "unknown"
#endif

#endif /* SROCE_VERSION_H */
