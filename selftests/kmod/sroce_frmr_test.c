// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel ULP's use of fast-register MRs, as NVMe-oF and NFS/RDMA make it,
 * against the RDMA device named by the "dev" parameter (selftests/kulp.sh).
 *
 * Two RC QPs of the device are connected to each other through its first
 * IPv4 RoCE v2 GID, as the userspace device tests do (no rdma_cm).  QP b
 * registers a two-page buffer with ib_map_mr_sg() and IB_WR_REG_MR; QP a
 * writes across its page boundary and reads it back through the new rkey,
 * sends a SEND_WITH_INV that invalidates it, and after a second
 * registration under the next key byte and a LOCAL_INV finds the rkey
 * refused.  Each step prints "ok N name" or "not ok N name: why"; loading
 * fails with -EIO unless every step passed, and the module stays loaded
 * (for rmmod) when they all did.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "ktest.h"

#define T_BUF_LEN	(2 * PAGE_SIZE)
#define T_MSG_LEN	256
#define T_PSN		0x100
#define T_WAIT_MS	20000
#define T_ACCESS	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

struct t_ctx {
	struct ib_device *dev;
	struct ktest_pair p;
	struct ib_mr *mr;
	struct scatterlist sg;
	bool sg_mapped;
	void *buf;		/* b's memory, registered by REG_MR */
	u8 *src;		/* a's memory, through the PD's DMA lkey */
	struct ktest_log log;
};

/* The next completion of cq has wr_id, status and (if successful) opcode. */
static bool t_expect(struct t_ctx *t, struct ib_cq *cq, u64 wr_id,
		     enum ib_wc_status st, enum ib_wc_opcode op,
		     struct ib_wc *out)
{
	struct ib_wc wc = {};

	if (!ktest_poll(cq, &wc, T_WAIT_MS)) {
		pr_err("no completion for wr_id %llu\n", wr_id);
		return false;
	}
	if (out)
		*out = wc;
	if (wc.wr_id != wr_id || wc.status != st ||
	    (st == IB_WC_SUCCESS && wc.opcode != op)) {
		pr_err("wr_id %llu status %s opcode %d, want wr_id %llu %s opcode %d\n",
		       wc.wr_id, ib_wc_status_msg(wc.status), wc.opcode, wr_id,
		       ib_wc_status_msg(st), op);
		return false;
	}
	return true;
}

static int t_setup(void *arg)
{
	struct t_ctx *t = arg;
	int err;

	err = ktest_pair_create(t->dev, &t->p, 16, T_PSN, T_ACCESS);
	if (err)
		return err;
	t->mr = ib_alloc_mr(t->p.pd, IB_MR_TYPE_MEM_REG, 4);
	if (IS_ERR(t->mr))
		return PTR_ERR(t->mr);
	t->buf = kzalloc(T_BUF_LEN, GFP_KERNEL);
	t->src = kmalloc(T_BUF_LEN, GFP_KERNEL);
	if (!t->buf || !t->src)
		return -ENOMEM;
	sg_init_one(&t->sg, t->buf, T_BUF_LEN);
	if (ib_dma_map_sg(t->dev, &t->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -EIO;
	t->sg_mapped = true;
	return 0;
}

static void t_teardown(void *arg)
{
	struct t_ctx *t = arg;

	if (t->sg_mapped)
		ib_dma_unmap_sg(t->dev, &t->sg, 1, DMA_BIDIRECTIONAL);
	kfree(t->src);
	kfree(t->buf);
	if (!IS_ERR_OR_NULL(t->mr))
		ib_dereg_mr(t->mr);
	ktest_pair_destroy(&t->p);
}

/* Map the buffer and register it on QP b under the MR's next key byte. */
static bool t_register(struct t_ctx *t)
{
	struct ib_reg_wr wr = {
		.wr = {
			.wr_id = 1,
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = t->mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ,
	};
	int n;

	n = ib_map_mr_sg(t->mr, &t->sg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		pr_err("ib_map_mr_sg mapped %d of 1\n", n);
		return false;
	}
	ib_update_fast_reg_key(t->mr, ib_inc_rkey(t->mr->rkey));
	wr.key = t->mr->rkey;
	if (ib_post_send(t->p.qp_b, &wr.wr, NULL))
		return false;
	return t_expect(t, t->p.cq_b, 1, IB_WC_SUCCESS, IB_WC_REG_MR, NULL);
}

/* a: an RDMA WRITE or READ of T_MSG_LEN bytes at rkey/raddr. */
static bool t_rdma(struct t_ctx *t, enum ib_wr_opcode op, u32 rkey,
		   u64 raddr, enum ib_wc_status st)
{
	struct ib_sge sge = {
		.addr = ib_dma_map_single(t->dev, t->src, T_MSG_LEN,
					  DMA_BIDIRECTIONAL),
		.length = T_MSG_LEN,
		.lkey = t->p.pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = 2,
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};
	bool ok;

	ok = !ib_post_send(t->p.qp_a, &wr.wr, NULL) &&
	     t_expect(t, t->p.cq_a, 2, st, op == IB_WR_RDMA_WRITE ?
		      IB_WC_RDMA_WRITE : IB_WC_RDMA_READ, NULL);
	ib_dma_unmap_single(t->dev, sge.addr, T_MSG_LEN, DMA_BIDIRECTIONAL);
	return ok;
}

/* a: SEND_WITH_INV of rkey into a receive of b; b's completion says so. */
static bool t_send_inv(struct t_ctx *t, u32 rkey)
{
	struct ib_sge rsge = {
		.addr = (uintptr_t)t->buf + T_BUF_LEN - 64,
		.length = 64,
		.lkey = t->p.pd->local_dma_lkey,
	};
	struct ib_recv_wr rwr = { .wr_id = 3, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge sge = {
		.addr = (uintptr_t)t->src,
		.length = 64,
		.lkey = t->p.pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = 4,
		.opcode = IB_WR_SEND_WITH_INV,
		.send_flags = IB_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.ex.invalidate_rkey = rkey,
	};
	struct ib_wc wc;

	if (ib_post_recv(t->p.qp_b, &rwr, NULL) || ib_post_send(t->p.qp_a, &wr, NULL))
		return false;
	if (!t_expect(t, t->p.cq_a, 4, IB_WC_SUCCESS, IB_WC_SEND, NULL) ||
	    !t_expect(t, t->p.cq_b, 3, IB_WC_SUCCESS, IB_WC_RECV, &wc))
		return false;
	if (!(wc.wc_flags & IB_WC_WITH_INVALIDATE) ||
	    wc.ex.invalidate_rkey != rkey || wc.byte_len != 64) {
		pr_err("receive: wc_flags 0x%x rkey 0x%x byte_len %u, want rkey 0x%x\n",
		       wc.wc_flags, wc.ex.invalidate_rkey, wc.byte_len, rkey);
		return false;
	}
	return true;
}

static bool t_local_inv(struct t_ctx *t, u32 rkey)
{
	struct ib_send_wr wr = {
		.wr_id = 5,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = rkey,
	};

	if (ib_post_send(t->p.qp_b, &wr, NULL))
		return false;
	return t_expect(t, t->p.cq_b, 5, IB_WC_SUCCESS, IB_WC_LOCAL_INV, NULL);
}

static bool t_same(const u8 *got, u8 seed, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (got[i] != (u8)(seed + i))
			return false;
	return true;
}

static void t_run(void *arg)
{
	struct t_ctx *t = arg;
	u8 *at = (u8 *)t->buf + PAGE_SIZE - T_MSG_LEN / 2;
	u64 across;
	u32 rkey;
	int i;

	ktest_report(&t->log, t_register(t), "reg_mr",
		     "IB_WR_REG_MR failed");
	/* the MR's addresses are the buffer's (no DMA device: virtual) */
	across = t->mr->iova + PAGE_SIZE - T_MSG_LEN / 2;
	for (i = 0; i < T_MSG_LEN; i++)
		t->src[i] = 0x40 + i;
	ktest_report(&t->log, t_rdma(t, IB_WR_RDMA_WRITE, t->mr->rkey, across,
				     IB_WC_SUCCESS) && t_same(at, 0x40, T_MSG_LEN),
		     "write_across_pages", "WRITE failed or data differs");
	for (i = 0; i < T_MSG_LEN; i++)
		at[i] = 0x90 + i;
	ktest_report(&t->log, t_rdma(t, IB_WR_RDMA_READ, t->mr->rkey, across,
				     IB_WC_SUCCESS) && t_same(t->src, 0x90, T_MSG_LEN),
		     "read_across_pages", "READ failed or data differs");
	rkey = t->mr->rkey;
	ktest_report(&t->log, t_send_inv(t, rkey), "send_with_inv",
		     "SEND_WITH_INV not reported as invalidating");
	ktest_report(&t->log, t_register(t) && t->mr->rkey != rkey &&
		     t_rdma(t, IB_WR_RDMA_WRITE, t->mr->rkey, across,
			    IB_WC_SUCCESS),
		     "reregister_next_key", "second registration unusable");
	rkey = t->mr->rkey;
	ktest_report(&t->log, t_local_inv(t, rkey), "local_inv",
		     "LOCAL_INV failed");
	memset(at, 0, T_MSG_LEN);
	ktest_report(&t->log, t_rdma(t, IB_WR_RDMA_WRITE, rkey, across,
				     IB_WC_REM_ACCESS_ERR) && !memchr_inv(at, 0, T_MSG_LEN),
		     "invalidated_key_refused", "WRITE through an invalidated key");
}

static const struct ktest_module t_module = {
	.setup_why = "PD, CQs, QPs, MR or buffer failed",
	.setup = t_setup,
	.run = t_run,
	.teardown = t_teardown,
};

KTEST_MODULE(struct t_ctx, t_module);
MODULE_DESCRIPTION("sroce selftest: fast-register MRs of a kernel ULP");
MODULE_LICENSE("GPL");
