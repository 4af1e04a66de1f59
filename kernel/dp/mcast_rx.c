// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast fan-out: a datagram sent to the multicast QP number (0xFFFFFF)
 * goes to every QP of its device attached to the group of its destination
 * address, each QP getting its own clone (datagram QPs only read the
 * packet).  The groups are kernel/obj/mcast.c's; this file reads them only
 * through sroce_mcast_members(), a snapshot of QP numbers taken under the
 * groups' spinlock, and takes a counted reference on each QP by number
 * (sroce_qp_get()), so a QP that detaches or is destroyed meanwhile is
 * simply not found.  Softirq, from the receive path (net.c).
 */
#include <linux/ip.h>
#include <linux/skbuff.h>
#include <net/ipv6.h>

#include "dev_limits.h"
#include "dp/exec.h"
#include "dp/mcast_rx.h"
#include "obj/mcast.h"
#include "obj/qp.h"
#include "stats.h"

/* The group a datagram was sent to: its destination IP address. */
static void sroce_mcast_rx_dest(const struct sk_buff *skb,
				struct in6_addr *addr)
{
	if (skb->protocol == htons(ETH_P_IP))
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr, addr);
	else
		*addr = ipv6_hdr(skb)->daddr;
}

/**
 * sroce_mcast_rx_deliver - hand a datagram to every QP of its group
 * @sdev: the device it arrived on
 * @skb: the datagram, as sroce_exec_rx() takes it; consumed
 *
 * Softirq.  Counted as no_mcast_group if no QP of sdev is attached to
 * the group, no_mem for each QP a clone could not be made for.
 */
void sroce_mcast_rx_deliver(struct sroce_dev *sdev, struct sk_buff *skb)
{
	u32 qpn[SROCE_MAX_MCAST_QP_ATTACH];
	struct in6_addr addr;
	struct sk_buff *copy;
	struct sroce_qp *qp;
	u32 i, nr;

	sroce_mcast_rx_dest(skb, &addr);
	nr = sroce_mcast_members(sdev, &addr, qpn);
	for (i = 0; i < nr; i++) {
		qp = sroce_qp_get(sdev, qpn[i]);
		if (!qp)
			continue;
		copy = i + 1 < nr ? skb_clone(skb, GFP_ATOMIC) : skb;
		if (copy) {
			sroce_exec_rx(qp, copy);
			if (copy == skb)
				skb = NULL;
		} else {
			sroce_drop_count(sdev, SROCE_DROP_NO_MEM);
		}
		sroce_qp_put(qp);
	}
	if (skb) {
		if (!nr)
			sroce_drop_count(sdev, SROCE_DROP_NO_MCAST);
		kfree_skb(skb);
	}
}
