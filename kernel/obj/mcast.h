/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MCAST_H
#define SROCE_MCAST_H

#include <rdma/ib_verbs.h>

#include "dev_limits.h"

struct in6_addr;
struct sroce_dev;
struct sroce_qp;

void sroce_mcast_qp_gone(struct sroce_qp *qp);
/* The receive path's view of the groups; mcast.c states the locking. */
u32 sroce_mcast_members(struct sroce_dev *sdev, const struct in6_addr *addr,
			u32 qpn[SROCE_MAX_MCAST_QP_ATTACH]);

void sroce_mcast_dev_init(struct sroce_dev *sdev);
void sroce_mcast_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_mcast_ops;

#endif /* SROCE_MCAST_H */
