// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel SRQ resized with ib_modify_srq(IB_SRQ_MAX_WR) (selftests/kulp.sh),
 * against the RDMA device named by the "dev" parameter.
 *
 * Kernel ULPs (the NVMe-oF and NFS/RDMA targets) post their receives to an
 * SRQ; sroce resizes a kernel SRQ by copying the WQEs posted and not yet
 * taken into a new ring (kernel/obj/srq.c).  The steps: an SRQ of 16 WRs
 * that QP b receives through, connected to QP a of the same device; 16
 * receives fill it and a 17th is refused; growing it to 64 lets 40 more in;
 * shrinking it below the 56 posted is refused and changes nothing; 56
 * SENDs from a then land in the 56 buffers in the order posted, each with
 * its own bytes.  Last, 64 receives are posted and 64 SENDs started, and
 * the SRQ is resized back and forth while they are consumed: every message
 * must still land, in order, with its bytes.  Each step prints "ok N name"
 * or "not ok N name: why"; loading fails with -EIO unless every step
 * passed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#include "ktest.h"

#define T_WAIT_MS	20000
#define T_FIRST		16	/* the SRQ's capacity at creation */
#define T_GROWN		64	/* after the resize */
#define T_POSTED	56	/* receives posted before the SENDs */
#define T_BUFS		64	/* receive buffers (the last step uses all) */
#define T_LEN		64	/* bytes per message */
#define T_PSN		0x2a00

struct t_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_srq *srq;
	struct ib_qp *a, *b;
	struct ktest_path path;
	u8 *src;		/* T_BUFS messages of T_LEN bytes to send */
	u64 src_dma;
	u8 *buf[T_BUFS];	/* receive buffer i, mapped at dma[i] */
	u64 dma[T_BUFS];
	struct ktest_log log;
};

/* Logs which call failed and how; returns its error. */
static int t_failed(const char *what, int err)
{
	pr_err("%s: %d\n", what, err);
	return err;
}

/* The byte message i of a round carries (distinct over both rounds). */
static u8 t_pattern(int round, int i)
{
	return (round ? 0x80 : 0x01) + i;
}

static int t_map(struct t_ctx *t, void *cpu, size_t len, u64 *dma)
{
	*dma = ib_dma_map_single(t->dev, cpu, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(t->dev, *dma)) {
		*dma = 0;
		return -ENOMEM;
	}
	return 0;
}

static int t_setup(void *arg)
{
	struct t_ctx *t = arg;
	struct ib_srq_init_attr srq_init = {
		.srq_type = IB_SRQT_BASIC,
		.attr = { .max_wr = T_FIRST, .max_sge = 1 },
	};
	struct ib_qp_init_attr b_init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	int i, err;

	t->src = kmalloc(T_BUFS * T_LEN, GFP_KERNEL);
	if (!t->src)
		return -ENOMEM;
	err = t_map(t, t->src, T_BUFS * T_LEN, &t->src_dma);
	if (err)
		return t_failed("mapping the send buffer", err);
	for (i = 0; i < T_BUFS; i++) {
		t->buf[i] = kzalloc(T_LEN, GFP_KERNEL);
		if (!t->buf[i])
			return -ENOMEM;
		err = t_map(t, t->buf[i], T_LEN, &t->dma[i]);
		if (err)
			return t_failed("mapping a receive buffer", err);
	}
	t->pd = ib_alloc_pd(t->dev, 0);
	if (IS_ERR(t->pd))
		return t_failed("ib_alloc_pd", PTR_ERR(t->pd));
	t->cq = ib_alloc_cq(t->dev, NULL, 4 * T_BUFS, 0, IB_POLL_DIRECT);
	if (IS_ERR(t->cq))
		return t_failed("ib_alloc_cq", PTR_ERR(t->cq));
	t->srq = ib_create_srq(t->pd, &srq_init);
	if (IS_ERR(t->srq))
		return t_failed("ib_create_srq", PTR_ERR(t->srq));
	if (srq_init.attr.max_wr != T_FIRST) {
		pr_err("SRQ of %u WRs, not %u\n", srq_init.attr.max_wr, T_FIRST);
		return -EINVAL;
	}
	t->a = ktest_create_rc_qp(t->pd, t->cq, T_BUFS);
	if (IS_ERR(t->a))
		return t_failed("ib_create_qp a", PTR_ERR(t->a));
	b_init.send_cq = t->cq;
	b_init.recv_cq = t->cq;
	b_init.srq = t->srq;
	t->b = ib_create_qp(t->pd, &b_init);
	if (IS_ERR(t->b))
		return t_failed("ib_create_qp b", PTR_ERR(t->b));
	err = ktest_find_path(t->dev, &t->path);
	if (!err)
		err = ktest_connect(t->a, t->b->qp_num, &t->path, T_PSN, 0);
	if (!err)
		err = ktest_connect(t->b, t->a->qp_num, &t->path, T_PSN, 0);
	return err ? t_failed("connecting the QPs", err) : 0;
}

/* A receive into buffer i (emptied first) with wr_id id. */
static int t_post_recv(struct t_ctx *t, int i, u64 id)
{
	struct ib_sge sge = {
		.addr = t->dma[i],
		.length = T_LEN,
		.lkey = t->pd->local_dma_lkey,
	};
	const struct ib_recv_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
	};

	memset(t->buf[i], 0, T_LEN);
	ib_dma_sync_single_for_device(t->dev, t->dma[i], T_LEN,
				      DMA_BIDIRECTIONAL);
	return ib_post_srq_recv(t->srq, &wr, NULL);
}

/* Receives into buffers [from, to), wr_id the buffer's index. */
static bool t_post_recvs(struct t_ctx *t, int from, int to)
{
	int err;

	for (; from < to; from++) {
		err = t_post_recv(t, from, from);
		if (err) {
			pr_err("receive %d: %d\n", from, err);
			return false;
		}
	}
	return true;
}

/* Signalled SENDs of messages [0, n) from a, message i of round's bytes. */
static bool t_send(struct t_ctx *t, int round, int n)
{
	struct ib_sge sge = { .length = T_LEN, .lkey = t->pd->local_dma_lkey };
	struct ib_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	int i, err;

	for (i = 0; i < n; i++)
		memset(t->src + i * T_LEN, t_pattern(round, i), T_LEN);
	ib_dma_sync_single_for_device(t->dev, t->src_dma, T_BUFS * T_LEN,
				      DMA_BIDIRECTIONAL);
	for (i = 0; i < n; i++) {
		wr.wr_id = 1000 + i;
		sge.addr = t->src_dma + i * T_LEN;
		err = ib_post_send(t->a, &wr, NULL);
		if (err) {
			pr_err("send %d: %d\n", i, err);
			return false;
		}
	}
	return true;
}

static bool t_buf_holds(struct t_ctx *t, int i, u8 c)
{
	int k;

	ib_dma_sync_single_for_cpu(t->dev, t->dma[i], T_LEN, DMA_BIDIRECTIONAL);
	for (k = 0; k < T_LEN; k++)
		if (t->buf[i][k] != c)
			return false;
	return true;
}

static int t_resize(struct t_ctx *t, u32 max_wr)
{
	struct ib_srq_attr attr = { .max_wr = max_wr };

	return ib_modify_srq(t->srq, &attr, IB_SRQ_MAX_WR);
}

/* The sizes the last step resizes the SRQ to, in turn. */
static const u32 t_sizes[] = { 2 * T_GROWN, T_GROWN, 4 * T_GROWN, T_GROWN };

/*
 * Poll n send and n receive completions: every one successful, the
 * receives of b in wr_id order 0..n-1, each T_LEN bytes, and buffer i
 * holding message i of round.  With resize, the SRQ is resized (to the
 * next of t_sizes) after every receive but the last, while the rest are
 * still posted or being taken.
 */
static bool t_check(struct t_ctx *t, int round, int n, bool resize)
{
	u32 size;
	int err;
	int sends = 0, recvs = 0;
	struct ib_wc wc;

	while (sends < n || recvs < n) {
		if (!ktest_poll(t->cq, &wc, T_WAIT_MS)) {
			pr_err("%d sends and %d receives completed of %d\n",
			       sends, recvs, n);
			return false;
		}
		if (wc.status != IB_WC_SUCCESS) {
			pr_err("wr_id %llu: status %d (%s)\n", wc.wr_id,
			       wc.status, ib_wc_status_msg(wc.status));
			return false;
		}
		if (wc.qp == t->a && wc.opcode == IB_WC_SEND) {
			if (wc.wr_id != 1000 + sends) {
				pr_err("send %d completed as %llu\n", sends,
				       wc.wr_id);
				return false;
			}
			sends++;
			continue;
		}
		if (wc.qp != t->b || wc.opcode != IB_WC_RECV ||
		    wc.wr_id != recvs || wc.byte_len != T_LEN) {
			pr_err("receive %d: qp %s opcode %d wr_id %llu len %u\n",
			       recvs, wc.qp == t->b ? "b" : "not b", wc.opcode,
			       wc.wr_id, wc.byte_len);
			return false;
		}
		if (!t_buf_holds(t, recvs, t_pattern(round, recvs))) {
			pr_err("buffer %d: not message %d's bytes (0x%02x...)\n",
			       recvs, recvs, t->buf[recvs][0]);
			return false;
		}
		recvs++;
		if (!resize || recvs == n)
			continue;
		size = t_sizes[recvs % ARRAY_SIZE(t_sizes)];
		err = t_resize(t, size);
		if (err) {
			pr_err("resize to %u after %d receives: %d\n", size,
			       recvs, err);
			return false;
		}
	}
	if (ktest_poll(t->cq, &wc, 100)) {
		pr_err("an extra completion, wr_id %llu\n", wc.wr_id);
		return false;
	}
	return true;
}

/* The SRQ's capacity by ib_query_srq(); 0 if that fails. */
static u32 t_capacity(struct t_ctx *t)
{
	struct ib_srq_attr attr = {};
	int err;

	err = ib_query_srq(t->srq, &attr);
	if (err) {
		pr_err("ib_query_srq: %d\n", err);
		return 0;
	}
	return attr.max_wr;
}

/*
 * Resize the SRQ between T_GROWN and 4 * T_GROWN while SENDs of round 1
 * fill T_GROWN receives: 16 times at once after the SENDs are posted, then
 * after each receive completion.  Each resize must succeed (no more than
 * T_GROWN are ever posted).
 */
static bool t_resize_while_consumed(struct t_ctx *t)
{
	u32 size;
	int i, err;

	if (!t_post_recvs(t, 0, T_GROWN) || !t_send(t, 1, T_GROWN))
		return false;
	for (i = 0; i < 16; i++) {
		size = t_sizes[i % ARRAY_SIZE(t_sizes)];
		err = t_resize(t, size);
		if (err) {
			pr_err("resize %d to %u: %d\n", i, size, err);
			return false;
		}
	}
	return t_check(t, 1, T_GROWN, true) && t_capacity(t) >= T_GROWN;
}

static void t_steps(void *arg)
{
	struct t_ctx *t = arg;
	bool ok;
	int err;
	u32 cap;

	ok = t_post_recvs(t, 0, T_FIRST);
	err = t_post_recv(t, T_FIRST, T_FIRST);
	if (ok && err != -ENOMEM)
		pr_err("receive %d into the full SRQ: %d\n", T_FIRST, err);
	ktest_report(&t->log, ok && err == -ENOMEM, "srq_fills_at_16",
		     "16 receives not taken, or a 17th not refused with ENOMEM");

	err = t_resize(t, T_GROWN);
	cap = t_capacity(t);
	if (err || cap < T_GROWN)
		pr_err("resize to %d: %d, capacity then %u\n", T_GROWN, err,
		       cap);
	ktest_report(&t->log, !err && cap >= T_GROWN, "srq_grows_to_64",
		     "modify_srq(IB_SRQ_MAX_WR) failed or did not grow it");

	ktest_report(&t->log, t_post_recvs(t, T_FIRST, T_POSTED),
		     "40_more_receives_posted", "a receive was refused");

	err = t_resize(t, 8);
	cap = t_capacity(t);
	if (err != -EINVAL || cap < T_GROWN)
		pr_err("resize to 8 with %d posted: %d, capacity then %u\n",
		       T_POSTED, err, cap);
	ktest_report(&t->log, err == -EINVAL && cap >= T_GROWN,
		     "shrink_below_posted_refused",
		     "not EINVAL, or the capacity changed");

	ktest_report(&t->log, t_send(t, 0, T_POSTED) &&
		     t_check(t, 0, T_POSTED, false), "56_sends_land_in_order",
		     "a completion or buffer was wrong");

	ktest_report(&t->log, t_resize_while_consumed(t),
		     "resize_while_consumed", "a resize, completion or buffer was wrong");
}

static void t_teardown(void *arg)
{
	struct t_ctx *t = arg;
	int i;

	if (!IS_ERR_OR_NULL(t->b))
		ib_destroy_qp(t->b);
	if (!IS_ERR_OR_NULL(t->a))
		ib_destroy_qp(t->a);
	if (!IS_ERR_OR_NULL(t->srq))
		ib_destroy_srq(t->srq);
	if (!IS_ERR_OR_NULL(t->cq))
		ib_free_cq(t->cq);
	if (!IS_ERR_OR_NULL(t->pd))
		ib_dealloc_pd(t->pd);
	for (i = T_BUFS - 1; i >= 0; i--) {
		if (t->dma[i])
			ib_dma_unmap_single(t->dev, t->dma[i], T_LEN,
					    DMA_BIDIRECTIONAL);
		kfree(t->buf[i]);
	}
	if (t->src_dma)
		ib_dma_unmap_single(t->dev, t->src_dma, T_BUFS * T_LEN,
				    DMA_BIDIRECTIONAL);
	kfree(t->src);
}

static const struct ktest_module t_module = {
	.setup_why = "buffers, PD, CQ, SRQ or QPs failed",
	.setup = t_setup,
	.run = t_steps,
	.teardown = t_teardown,
};

KTEST_MODULE(struct t_ctx, t_module);
MODULE_DESCRIPTION("sroce test: resizing a kernel SRQ");
MODULE_LICENSE("GPL");
