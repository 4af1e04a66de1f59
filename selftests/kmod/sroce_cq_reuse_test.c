// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel consumer's CQ outlives a QP whose number is reused at once
 * (selftests/kulp.sh), against the RDMA device named by the "dev" parameter.
 *
 * A kernel consumer learns a completion's QP from wc->qp, which the device
 * fills in when the CQE is polled.  sroce hands out the lowest free QP
 * number, so the next create_qp after a destroy gets the old number back; a
 * completion the destroyed QP left unpolled in a shared CQ must then not be
 * delivered naming the new QP.  The steps: QPs x and y share one CQ, both in
 * the error state; a receive posted on x is flushed into the CQ and left
 * there; x is destroyed and z created (with x's number); then a receive
 * posted on y is flushed.  Polling must give y's completion alone, naming
 * y, and nothing naming z.  Each step prints "ok N name" or "not ok N name:
 * why"; loading fails with -EIO unless every step passed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <rdma/ib_verbs.h>

#include "ktest.h"

#define T_WAIT_MS	20000
#define T_QUIET_MS	1000	/* how long "no more completions" is watched */

struct t_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *x, *y, *z;
	struct ktest_log log;
};

/*
 * A QP in the error state flushes every receive posted to it.  The verbs'
 * state table has no RESET to ERR: through INIT.
 */
static int t_to_error(struct ib_qp *qp)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	int err;

	err = ktest_to_init(qp, 0);
	if (err)
		return err;
	return ib_modify_qp(qp, &a, IB_QP_STATE);
}

static int t_post_recv(struct ib_qp *qp, u64 wr_id)
{
	const struct ib_recv_wr wr = { .wr_id = wr_id };

	return ib_post_recv(qp, &wr, NULL);
}

/*
 * The CQ's event handler: the test only arms the CQ to learn whether it
 * holds completions (IB_CQ_REPORT_MISSED_EVENTS), and ignores the event.
 * (A CQ from ib_alloc_cq(IB_POLL_DIRECT) must never be armed: ib_core
 * warns about any event on it.)
 */
static void t_cq_event(struct ib_cq *cq, void *ctx)
{
}

/* Wait until the CQ holds a completion, without consuming it. */
static bool t_wait_nonempty(struct ib_cq *cq)
{
	unsigned long end = jiffies + msecs_to_jiffies(T_WAIT_MS);

	do {
		if (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			return true;
		usleep_range(200, 1000);
	} while (time_before(jiffies, end));
	return false;
}

/* Logs which call failed and how; returns its error. */
static int t_failed(const char *what, int err)
{
	pr_err("%s: %d\n", what, err);
	return err;
}

static int t_setup(void *arg)
{
	struct t_ctx *t = arg;
	struct ib_cq_init_attr cq_attr = { .cqe = 16 };
	int err;

	t->pd = ib_alloc_pd(t->dev, 0);
	if (IS_ERR(t->pd))
		return t_failed("ib_alloc_pd", PTR_ERR(t->pd));
	t->cq = ib_create_cq(t->dev, t_cq_event, NULL, NULL, &cq_attr);
	if (IS_ERR(t->cq))
		return t_failed("ib_create_cq", PTR_ERR(t->cq));
	t->x = ktest_create_rc_qp(t->pd, t->cq, 4);
	if (IS_ERR(t->x))
		return t_failed("ib_create_qp x", PTR_ERR(t->x));
	t->y = ktest_create_rc_qp(t->pd, t->cq, 4);
	if (IS_ERR(t->y))
		return t_failed("ib_create_qp y", PTR_ERR(t->y));
	err = t_to_error(t->x);
	if (!err)
		err = t_to_error(t->y);
	return err ? t_failed("ib_modify_qp to ERR", err) : 0;
}

static void t_steps(void *arg)
{
	struct t_ctx *t = arg;
	struct ib_wc wc = {};
	u32 x_num;
	bool got;

	ktest_report(&t->log, !t_post_recv(t->x, 1) && t_wait_nonempty(t->cq),
		     "x_flush_left_in_cq", "no flushed completion of x");
	x_num = t->x->qp_num;
	ib_destroy_qp(t->x);
	t->x = NULL;
	t->z = ktest_create_rc_qp(t->pd, t->cq, 4);
	if (IS_ERR(t->z)) {
		ktest_report(&t->log, false, "z_created", "create_qp failed");
		t->z = NULL;
		return;
	}
	ktest_report(&t->log, t->z->qp_num == x_num, "z_reuses_x_number",
		     "z got another number: the case does not arise");
	ktest_report(&t->log, !t_post_recv(t->y, 2), "y_recv_posted",
		     "post_recv failed");

	got = ktest_poll(t->cq, &wc, T_WAIT_MS);
	if (got && wc.wr_id == 1)
		pr_err("x's completion delivered, wc->qp %s\n",
		       wc.qp == t->z ? "z (the reused number)" : "other");
	ktest_report(&t->log, got && wc.wr_id == 2 && wc.qp == t->y &&
		     wc.status == IB_WC_WR_FLUSH_ERR, "first_completion_is_y",
		     "not y's flushed receive");
	got = ktest_poll(t->cq, &wc, T_QUIET_MS);
	if (got)
		pr_err("extra completion wr_id %llu\n", wc.wr_id);
	ktest_report(&t->log, !got, "nothing_names_z", "a completion followed y's");
}

static void t_teardown(void *arg)
{
	struct t_ctx *t = arg;

	if (!IS_ERR_OR_NULL(t->z))
		ib_destroy_qp(t->z);
	if (!IS_ERR_OR_NULL(t->y))
		ib_destroy_qp(t->y);
	if (!IS_ERR_OR_NULL(t->x))
		ib_destroy_qp(t->x);
	if (!IS_ERR_OR_NULL(t->cq))
		ib_destroy_cq(t->cq);
	if (!IS_ERR_OR_NULL(t->pd))
		ib_dealloc_pd(t->pd);
}

static const struct ktest_module t_module = {
	.setup_why = "PD, CQ or QPs failed",
	.setup = t_setup,
	.run = t_steps,
	.teardown = t_teardown,
};

KTEST_MODULE(struct t_ctx, t_module);
MODULE_DESCRIPTION("sroce test: kernel CQs and reused QP numbers");
MODULE_LICENSE("GPL");
