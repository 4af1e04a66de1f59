/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_LOOP_H
#define SROCE_LOOP_H

#include <linux/types.h>

struct dentry;
struct dst_entry;
struct sk_buff;
struct sroce_qp;

/*
 * Same-host delivery (kernel/dp/loop.c): a packet whose route is local goes
 * from sroce_net_xmit() to a per-CPU queue and from there, in softirq, to
 * the receive path, without the IP output and input paths and the loopback
 * netdev.
 */
bool sroce_loop_route_local(const struct dst_entry *dst, bool v4);
bool sroce_loop_icrc(void);
int sroce_loop_xmit(struct sroce_qp *qp, struct sk_buff *skb, bool icrc);

int sroce_loop_init(void);
void sroce_loop_exit(void);
void sroce_loop_debugfs(struct dentry *dir);

#endif /* SROCE_LOOP_H */
