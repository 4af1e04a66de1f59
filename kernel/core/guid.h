/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef SROCE_CORE_GUID_H
#define SROCE_CORE_GUID_H

#include "core_env.h"

#define SROCE_GUID_LEN 8
#define SROCE_MAC_LEN 6

void sroce_guid_from_mac(u8 guid[SROCE_GUID_LEN], const u8 mac[SROCE_MAC_LEN]);

#endif /* SROCE_CORE_GUID_H */
