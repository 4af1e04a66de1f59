/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MCAST_H
#define SROCE_MCAST_H

#include <rdma/ib_verbs.h>

struct sk_buff;
struct sroce_dev;
struct sroce_qp;

void sroce_mcast_deliver(struct sroce_dev *sdev, struct sk_buff *skb);
void sroce_mcast_qp_gone(struct sroce_qp *qp);

void sroce_mcast_dev_init(struct sroce_dev *sdev);
void sroce_mcast_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_mcast_ops;

#endif /* SROCE_MCAST_H */
