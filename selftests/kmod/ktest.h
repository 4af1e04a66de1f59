/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test modules of selftests/kmod share: the step report that
 * selftests/kulp.sh counts ("ok N name" or "not ok N name: why" in the
 * kernel log, under the module's pr_fmt), creating an RC QP and taking it
 * to INIT or connecting it to another QP of the same device, and polling a
 * CQ with a time limit, and the body of a module's init (ktest_main).  A
 * module defines pr_fmt before including this.
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

/* Two RC QPs of one PD and device, each with a CQ of its own (IB_POLL_DIRECT). */
struct ktest_pair {
	struct ib_pd *pd;
	struct ib_cq *cq_a, *cq_b;
	struct ib_qp *qp_a, *qp_b;
	struct ktest_path path;
};

/*
 * Take both QPs of p to RESET (dropping what their CQs hold) and connect
 * them to each other again: also the way out of the error state.
 */
static inline int ktest_pair_connect(struct ktest_pair *p, u32 psn, int access)
{
	struct ib_qp_attr reset = { .qp_state = IB_QPS_RESET };
	struct ib_wc wc;
	int err;

	err = ib_modify_qp(p->qp_a, &reset, IB_QP_STATE);
	if (!err)
		err = ib_modify_qp(p->qp_b, &reset, IB_QP_STATE);
	while (ib_poll_cq(p->cq_a, 1, &wc) == 1)
		;
	while (ib_poll_cq(p->cq_b, 1, &wc) == 1)
		;
	if (!err)
		err = ktest_connect(p->qp_a, p->qp_b->qp_num, &p->path, psn,
				    access);
	if (!err)
		err = ktest_connect(p->qp_b, p->qp_a->qp_num, &p->path, psn,
				    access);
	return err;
}

/* Create p's objects on dev with wr WRs per queue and connect the QPs. */
static inline int ktest_pair_create(struct ib_device *dev, struct ktest_pair *p,
				    u32 wr, u32 psn, int access)
{
	int err;

	p->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(p->pd))
		return PTR_ERR(p->pd);
	p->cq_a = ib_alloc_cq(dev, NULL, 2 * wr, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->cq_a))
		return PTR_ERR(p->cq_a);
	p->cq_b = ib_alloc_cq(dev, NULL, 2 * wr, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->cq_b))
		return PTR_ERR(p->cq_b);
	p->qp_a = ktest_create_rc_qp(p->pd, p->cq_a, wr);
	if (IS_ERR(p->qp_a))
		return PTR_ERR(p->qp_a);
	p->qp_b = ktest_create_rc_qp(p->pd, p->cq_b, wr);
	if (IS_ERR(p->qp_b))
		return PTR_ERR(p->qp_b);
	err = ktest_find_path(dev, &p->path);
	if (!err)
		err = ktest_pair_connect(p, psn, access);
	if (err)
		pr_err("connecting the QPs: %d\n", err);
	return err;
}

/* Destroy what ktest_pair_create() made, however far it got. */
static inline void ktest_pair_destroy(struct ktest_pair *p)
{
	if (!IS_ERR_OR_NULL(p->qp_b))
		ib_destroy_qp(p->qp_b);
	if (!IS_ERR_OR_NULL(p->qp_a))
		ib_destroy_qp(p->qp_a);
	if (!IS_ERR_OR_NULL(p->cq_b))
		ib_free_cq(p->cq_b);
	if (!IS_ERR_OR_NULL(p->cq_a))
		ib_free_cq(p->cq_a);
	if (!IS_ERR_OR_NULL(p->pd))
		ib_dealloc_pd(p->pd);
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

/* A test module's parts; ctx is the module's own state. */
struct ktest_module {
	const char *setup_why;	/* what the "setup" step failing means */
	int (*setup)(void *ctx);
	void (*run)(void *ctx);	/* its steps, after a set-up that worked */
	void (*teardown)(void *ctx); /* whatever setup got to */
};

/*
 * The body of a test module's init: hold the device named name in *dev
 * while m's set-up (a step of its own, "setup") and steps run in ctx, whose
 * steps are counted in *log.  Returns -ENODEV without the device, and
 * -EIO (so that loading fails) unless every step passed.
 */
static inline int ktest_main(const char *name, const struct ktest_module *m,
			     void *ctx, struct ib_device **dev,
			     struct ktest_log *log)
{
	int err;

	*dev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (!*dev) {
		pr_err("no RDMA device %s\n", name);
		return -ENODEV;
	}
	err = m->setup(ctx);
	if (err)
		pr_err("setup: %d\n", err);
	ktest_report(log, !err, "setup", m->setup_why);
	if (!err)
		m->run(ctx);
	m->teardown(ctx);
	ib_device_put(*dev);
	pr_info("%d steps, %d failed\n", log->step, log->failed);
	return log->failed ? -EIO : 0;
}

/*
 * A test module's parameter "dev" (the device to test, sroce0 unless
 * given), init and exit: ktest_main() with a zeroed struct ctx_type (which
 * has members dev and log) and the functions of m.  (checkpatch warns of
 * the return in a macro; it is the return of the function the macro
 * defines, as in the kernel's module_driver().)
 */
#define KTEST_MODULE(ctx_type, m)					\
static char *ktest_dev = "sroce0";					\
module_param_named(dev, ktest_dev, charp, 0444);			\
MODULE_PARM_DESC(dev, "RDMA device to test");				\
static int __init ktest_init(void)					\
{									\
	ctx_type t = {};						\
									\
	return ktest_main(ktest_dev, &(m), &t, &t.dev, &t.log);	\
}									\
static void __exit ktest_exit(void)					\
{									\
}									\
module_init(ktest_init);						\
module_exit(ktest_exit)

#endif /* SROCE_KTEST_H */
