// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA READs through a fast-register MR while another QP keeps invalidating
 * and re-registering it, against the device named by "dev"
 * (selftests/kulp.sh).  A READ response must never carry bytes that the
 * region did not hold under the READ's R_Key: not the pages of a later
 * registration, and not bytes a failed copy left unwritten.
 *
 * QP a READs T_READ_LEN bytes of buffer one through the rkey of its latest
 * registration; QP b, a's peer, answers.  A kernel thread posts LOCAL_INV
 * and IB_WR_REG_MR on QP c (connected to itself) in a loop, alternating
 * between buffer one (T_PAGES pages) and buffer two (one page, other bytes)
 * under the next key byte each time; it invalidates buffer one at a random
 * point between a READ's post and twice a READ's usual duration after it,
 * so registrations change while READ responses are being built on another
 * CPU, and some READs finish first.  Every READ must complete
 * either successfully with exactly buffer one's bytes, or with a remote
 * access error (its rkey stopped being valid), after which a and b are
 * reconnected.  Steps: setup, reads_complete, both_outcomes,
 * no_foreign_bytes; loading fails with -EIO unless each passed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "ktest.h"

static unsigned int t_reads = 400;
module_param_named(reads, t_reads, uint, 0444);
MODULE_PARM_DESC(reads, "READs to race against the re-registrations");

#define T_PAGES		4
#define T_READ_LEN	(T_PAGES * PAGE_SIZE)
#define T_PSN		0x200
#define T_WAIT_MS	20000
#define T_ACCESS	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

struct t_buf {
	u8 *mem;
	size_t len;
	struct scatterlist sg;
	bool mapped;
};

struct t_ctx {
	struct ib_device *dev;
	struct ktest_pair p;	/* a READs, b answers */
	struct ib_cq *cq_c;
	struct ib_qp *qp_c;	/* the registrar's, connected to itself */
	struct ib_mr *mr;
	struct t_buf one, two;
	u8 *dst;		/* a's READ target, through the DMA lkey */
	u64 dst_dma;
	u32 rkey_one;		/* latest key of buffer one's registration */
	atomic_t reads_posted;
	u32 read_us;		/* how long a successful READ takes, smoothed */
	bool registrar_failed;
	unsigned long cycles;	/* registrar: registrations of buffer one */
	struct ktest_log log;
};

static u8 t_byte(int which, size_t i)
{
	return (u8)(which * 0x55 + i * 7 + (i >> 8));
}

static int t_buf_init(struct t_ctx *t, struct t_buf *b, size_t len, int which)
{
	size_t i;

	/* a power-of-two kmalloc of a page or more is page aligned */
	b->mem = kmalloc(len, GFP_KERNEL);
	if (!b->mem)
		return -ENOMEM;
	b->len = len;
	for (i = 0; i < len; i++)
		b->mem[i] = t_byte(which, i);
	sg_init_one(&b->sg, b->mem, len);
	if (ib_dma_map_sg(t->dev, &b->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -EIO;
	b->mapped = true;
	return 0;
}

static void t_buf_free(struct t_ctx *t, struct t_buf *b)
{
	if (b->mapped)
		ib_dma_unmap_sg(t->dev, &b->sg, 1, DMA_BIDIRECTIONAL);
	kfree(b->mem);
}

/* The next completion of cq: wr_id and status as expected (c's own WRs). */
static bool t_done(struct ib_cq *cq, u64 wr_id)
{
	struct ib_wc wc = {};

	if (!ktest_poll(cq, &wc, T_WAIT_MS)) {
		pr_err("registrar: no completion for wr_id %llu\n", wr_id);
		return false;
	}
	if (wc.wr_id != wr_id || wc.status != IB_WC_SUCCESS) {
		pr_err("registrar: wr_id %llu status %s, want wr_id %llu\n",
		       wc.wr_id, ib_wc_status_msg(wc.status), wr_id);
		return false;
	}
	return true;
}

/* Register b's pages on QP c under the MR's next key byte. */
static bool t_register(struct t_ctx *t, struct t_buf *b)
{
	struct ib_reg_wr wr = {
		.wr = {
			.wr_id = 1,
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = t->mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ,
	};

	if (ib_map_mr_sg(t->mr, &b->sg, 1, NULL, PAGE_SIZE) != 1)
		return false;
	ib_update_fast_reg_key(t->mr, ib_inc_rkey(t->mr->rkey));
	wr.key = t->mr->rkey;
	return !ib_post_send(t->qp_c, &wr.wr, NULL) && t_done(t->cq_c, 1);
}

static bool t_invalidate(struct t_ctx *t)
{
	struct ib_send_wr wr = {
		.wr_id = 2,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = t->mr->rkey,
	};

	return !ib_post_send(t->qp_c, &wr, NULL) && t_done(t->cq_c, 2);
}

/*
 * Wait until a READ was posted since posted was read, then for a random
 * time up to twice what a READ takes: the invalidation that follows lands
 * before, during or after the READ's response, on any kernel's speed.
 */
static void t_registrar_wait(struct t_ctx *t, int posted)
{
	u32 us;

	while (atomic_read(&t->reads_posted) == posted &&
	       !kthread_should_stop())
		usleep_range(20, 50);
	us = get_random_u32() % (2 * READ_ONCE(t->read_us) + 1);
	usleep_range(us, us + 20);
}

/*
 * The registrar: buffer one until a READ has been posted and for a random
 * part of its time, then buffer two, each under a new key.
 */
static int t_registrar(void *arg)
{
	struct t_ctx *t = arg;
	int posted;

	while (!kthread_should_stop()) {
		posted = atomic_read(&t->reads_posted);
		if (!t_register(t, &t->one))
			break;
		WRITE_ONCE(t->rkey_one, t->mr->rkey);
		t->cycles++;
		t_registrar_wait(t, posted);
		if (!t_invalidate(t) || !t_register(t, &t->two))
			break;
		usleep_range(10, 50);
		if (!t_invalidate(t))
			break;
	}
	if (!kthread_should_stop()) {
		WRITE_ONCE(t->registrar_failed, true);
		while (!kthread_should_stop())
			msleep(20);
	}
	return 0;
}

static int t_setup(void *arg)
{
	struct t_ctx *t = arg;
	int err;

	err = ktest_pair_create(t->dev, &t->p, 8, T_PSN, T_ACCESS);
	if (err)
		return err;
	t->cq_c = ib_alloc_cq(t->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(t->cq_c))
		return PTR_ERR(t->cq_c);
	t->qp_c = ktest_create_rc_qp(t->p.pd, t->cq_c, 8);
	if (IS_ERR(t->qp_c))
		return PTR_ERR(t->qp_c);
	err = ktest_connect(t->qp_c, t->qp_c->qp_num, &t->p.path, T_PSN, 0);
	if (err)
		return err;
	t->mr = ib_alloc_mr(t->p.pd, IB_MR_TYPE_MEM_REG, T_PAGES);
	if (IS_ERR(t->mr))
		return PTR_ERR(t->mr);
	err = t_buf_init(t, &t->one, T_READ_LEN, 1);
	if (!err)
		err = t_buf_init(t, &t->two, PAGE_SIZE, 2);
	if (err)
		return err;
	t->dst = kmalloc(T_READ_LEN, GFP_KERNEL);
	if (!t->dst)
		return -ENOMEM;
	t->dst_dma = ib_dma_map_single(t->dev, t->dst, T_READ_LEN,
				       DMA_BIDIRECTIONAL);
	return 0;
}

static void t_teardown(void *arg)
{
	struct t_ctx *t = arg;

	if (t->dst)
		ib_dma_unmap_single(t->dev, t->dst_dma, T_READ_LEN,
				    DMA_BIDIRECTIONAL);
	kfree(t->dst);
	t_buf_free(t, &t->two);
	t_buf_free(t, &t->one);
	if (!IS_ERR_OR_NULL(t->mr))
		ib_dereg_mr(t->mr);
	if (!IS_ERR_OR_NULL(t->qp_c))
		ib_destroy_qp(t->qp_c);
	if (!IS_ERR_OR_NULL(t->cq_c))
		ib_free_cq(t->cq_c);
	ktest_pair_destroy(&t->p);
}

struct t_tally {
	unsigned int ok, refused, partial, foreign, bad;
};

/* One READ of buffer one through rkey; its outcome counted in tally. */
static void t_read(struct t_ctx *t, u32 rkey, u64 wr_id, struct t_tally *n)
{
	struct ib_sge sge = {
		.addr = t->dst_dma,
		.length = T_READ_LEN,
		.lkey = t->p.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = wr_id,
			.opcode = IB_WR_RDMA_READ,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = sg_dma_address(&t->one.sg),
		.rkey = rkey,
	};
	struct ib_wc wc = {};
	ktime_t start;
	size_t i;
	u32 us;

	memset(t->dst, 0, T_READ_LEN);
	start = ktime_get();
	atomic_inc(&t->reads_posted);
	if (ib_post_send(t->p.qp_a, &wr.wr, NULL) ||
	    !ktest_poll(t->p.cq_a, &wc, T_WAIT_MS) || wc.wr_id != wr_id) {
		pr_err("READ %llu: not posted or no completion\n", wr_id);
		n->bad++;
		return;
	}
	if (wc.status == IB_WC_REM_ACCESS_ERR) {
		n->refused++;
		/* refused after some response packets had been written */
		if (memchr_inv(t->dst, 0, T_READ_LEN))
			n->partial++;
		/* both ends are in the error state now */
		if (ktest_pair_connect(&t->p, T_PSN, T_ACCESS))
			n->bad++;
		return;
	}
	if (wc.status != IB_WC_SUCCESS) {
		pr_err("READ %llu: %s\n", wr_id, ib_wc_status_msg(wc.status));
		n->bad++;
		return;
	}
	n->ok++;
	us = ktime_us_delta(ktime_get(), start);
	WRITE_ONCE(t->read_us, (3 * READ_ONCE(t->read_us) + us) / 4);
	for (i = 0; i < T_READ_LEN; i++) {
		if (t->dst[i] != t_byte(1, i)) {
			if (!n->foreign)
				pr_err("READ %llu: byte %zu is 0x%02x, buffer one holds 0x%02x\n",
				       wr_id, i, t->dst[i], t_byte(1, i));
			n->foreign++;
			return;
		}
	}
}

static void t_run(void *arg)
{
	struct t_ctx *t = arg;
	struct task_struct *registrar;
	struct t_tally n = {};
	unsigned int i;
	u32 rkey;

	t->read_us = 1000;
	registrar = kthread_run(t_registrar, t, "sroce_frmr_race");
	if (IS_ERR(registrar)) {
		ktest_report(&t->log, false, "reads_complete", "no registrar");
		return;
	}
	for (i = 0; i < t_reads && !n.bad && !READ_ONCE(t->registrar_failed);
	     i++) {
		rkey = READ_ONCE(t->rkey_one);
		if (!rkey) {
			usleep_range(100, 200);
			i--;
			continue;
		}
		t_read(t, rkey, 100 + i, &n);
	}
	kthread_stop(registrar);
	pr_info("%u READs: %u complete, %u refused (%u of them part-way), %u with foreign bytes; %lu registrations of buffer one\n",
		i, n.ok, n.refused, n.partial, n.foreign, t->cycles);
	ktest_report(&t->log, !n.bad && !t->registrar_failed, "reads_complete",
		     "a READ, a registration or a reconnection failed");
	ktest_report(&t->log, n.ok && n.refused, "both_outcomes",
		     "the re-registrations never met a READ (no race tested)");
	ktest_report(&t->log, !n.foreign, "no_foreign_bytes",
		     "a successful READ returned bytes buffer one did not hold");
}

static const struct ktest_module t_module = {
	.setup_why = "PD, CQs, QPs, MR or buffers failed",
	.setup = t_setup,
	.run = t_run,
	.teardown = t_teardown,
};

KTEST_MODULE(struct t_ctx, t_module);
MODULE_DESCRIPTION("sroce selftest: READs racing fast-register MR changes");
MODULE_LICENSE("GPL");
