/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_XRCD_H
#define SROCE_XRCD_H

#include <rdma/ib_verbs.h>

extern const struct ib_device_ops sroce_xrcd_ops;

#endif /* SROCE_XRCD_H */
