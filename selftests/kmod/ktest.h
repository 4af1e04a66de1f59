/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the test modules of selftests/kmod share: the step report that
 * selftests/kulp.sh counts ("ok N name" or "not ok N name: why" in the
 * kernel log, under the module's pr_fmt), creating an RC QP and taking it
 * to INIT, and polling a CQ with a time limit.  A module defines pr_fmt
 * before including this.
 */
#ifndef SROCE_KTEST_H
#define SROCE_KTEST_H

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/printk.h>
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
