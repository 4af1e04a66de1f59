/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test modules of selftests/kmod share: the step report that
 * selftests/kulp.sh counts ("ok N name" or "not ok N name: why" in the
 * kernel log, under the module's pr_fmt), creating an RC QP and taking it
 * to INIT or connecting it to another QP of the same device, and polling a
 * CQ with a time limit.  A module defines pr_fmt before including this.
 */
#ifndef SROCE_KTEST_H
#define SROCE_KTEST_H

#include <linux/delay.h>
#include <linux/if_ether.h>
#include <linux/jiffies.h>
#include <linux/printk.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

struct ktest_log {
	int step;
	int failed;
};

static inline void ktest_report(struct ktest_log *log, bool ok,
				const char *name, const char *why)
{
	log->step++;
	if (ok) {
		pr_info("ok %d %s\n", log->step, name);
		return;
	}
	log->failed++;
	pr_err("not ok %d %s: %s\n", log->step, name, why);
}

/* An RC QP of pd with cq for both queues, wr WRs and one SGE each way. */
static inline struct ib_qp *ktest_create_rc_qp(struct ib_pd *pd,
					       struct ib_cq *cq, u32 wr)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = wr,
			.max_recv_wr = wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	return ib_create_qp(pd, &init);
}

/* RESET to INIT on port 1 with the remote rights in access. */
static inline int ktest_to_init(struct ib_qp *qp, int access)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};

	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/* Where QPs of one device reach each other: its first IPv4 RoCE v2 GID. */
struct ktest_path {
	union ib_gid gid;
	int gid_index;
	u8 mac[ETH_ALEN];	/* the GID's netdev: the peer is this device */
};

static inline int ktest_find_path(struct ib_device *dev, struct ktest_path *p)
{
	const struct ib_gid_attr *attr;
	int i;

	for (i = 0; i < 128; i++) {
		attr = rdma_get_gid_attr(dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw) &&
		    !rdma_read_gid_l2_fields(attr, NULL, p->mac)) {
			p->gid = attr->gid;
			p->gid_index = i;
			rdma_put_gid_attr(attr);
			return 0;
		}
		rdma_put_gid_attr(attr);
	}
	return -ENODEV;
}

/*
 * Take qp from RESET to RTS, connected to QP number dest of the same device
 * over path (MTU 1024, both PSNs psn, 4 READs in flight each way, the remote
 * rights in access).
 */
static inline int ktest_connect(struct ib_qp *qp, u32 dest,
				struct ktest_path *p, u32 psn, int access)
{
	struct ib_qp_attr a = {};
	int err;

	err = ktest_to_init(qp, access);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &p->gid, 0, p->gid_index, 64, 0);
	/* ib_core resolves the MAC for user QPs only (rdma_cm does it for ULPs) */
	memcpy(a.ah_attr.roce.dmac, p->mac, ETH_ALEN);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* The next completion of cq within ms milliseconds; false if none came. */
static inline bool ktest_poll(struct ib_cq *cq, struct ib_wc *wc,
			      unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	do {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return true;
		usleep_range(200, 1000);
	} while (time_before(jiffies, end));
	return false;
}

#endif /* SROCE_KTEST_H */
