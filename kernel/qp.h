/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_QP_H
#define SROCE_QP_H

#include <linux/completion.h>
#include <linux/if_ether.h>
#include <linux/in6.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <rdma/ib_verbs.h>

#include "queue.h"

struct sroce_dev;
struct sroce_qp;

/*
 * The part of a QP that lookups by number touch before they hold a
 * reference.  ib_core frees struct ib_qp (and so struct sroce_qp) with
 * kfree() as soon as destroy_qp returns, which a lookup that loaded the
 * pointer under RCU could still be racing with; this small object is the
 * driver's own and is freed after a grace period.  See the head of qp.c.
 */
struct sroce_qp_ref {
	refcount_t count;		/* 1 for the QPN entry, 1 per lookup */
	struct completion released;	/* count reached zero */
	struct sroce_qp *qp;		/* valid while count > 0 */
	struct rcu_head rcu;
};

/*
 * Where packets of a connected QP go, resolved from the address vector at
 * RTR.  Addresses are in network order; daddr and saddr are IPv4-mapped
 * IPv6 addresses when v4 is set.
 */
struct sroce_qp_av {
	const struct ib_gid_attr *sgid_attr;	/* held; source GID and port */
	bool v4;				/* RoCE v2 over IPv4 */
	struct in6_addr saddr;
	struct in6_addr daddr;
	u8 dmac[ETH_ALEN];
	u8 hop_limit;
	u8 traffic_class;
	u32 flow_label;
};

/*
 * A queue pair (RC only so far).
 *
 * Locking: mutex serialises the control path (modify_qp, query_qp) and
 * protects every attribute below it.  state is also written with
 * WRITE_ONCE() so that the data path may sample it without the mutex.
 * Fields above the mutex are fixed at creation.
 */
struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_qp_ref *ref;
	struct sroce_queue sq;
	struct sroce_queue rq;
	struct ib_qp_cap cap;		/* as written back at creation */
	enum ib_sig_type sq_sig_type;
	bool user;			/* rings mapped by a provider */

	struct mutex mutex;		/* control path; see above */
	enum ib_qp_state state;
	enum ib_mtu path_mtu;
	u32 qkey;
	u32 rq_psn;			/* 24 bits */
	u32 sq_psn;			/* 24 bits */
	u32 dest_qp_num;		/* 24 bits */
	int access;			/* IB_ACCESS_REMOTE_* */
	u16 pkey_index;
	u8 port_num;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 min_rnr_timer;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	struct rdma_ah_attr ah_attr;	/* as set, for query; sgid_attr NULL */
	struct sroce_qp_av av;		/* resolved; valid once ah_attr is */
};

static inline struct sroce_qp *to_sroce_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
void sroce_qp_put(struct sroce_qp *qp);

void sroce_qp_dev_init(struct sroce_dev *sdev);
void sroce_qp_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_qp_ops;

#endif /* SROCE_QP_H */
