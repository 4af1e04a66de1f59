/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MCAST_RX_H
#define SROCE_MCAST_RX_H

struct sk_buff;
struct sroce_dev;

/* A datagram to the multicast QPN, to every QP of its group; softirq. */
void sroce_mcast_rx_deliver(struct sroce_dev *sdev, struct sk_buff *skb);

#endif /* SROCE_MCAST_RX_H */
