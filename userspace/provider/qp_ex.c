// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: the extended send API (struct ibv_qp_ex, ibv_wr_*()).
 *
 * A QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gets the callbacks
 * below.  They write the same SQ slots as ibv_post_send(), with the same
 * code (wq.h):
 *  - wr_start takes the SQ lock and remembers the producer;
 *  - each opcode call (wr_send, wr_rdma_write, ...) checks the slot built
 *    before it, takes the next slot and writes the operation, with the
 *    wr_id and wr_flags the application put in the ibv_qp_ex;
 *  - the setters (wr_set_sge*, wr_set_inline_data*, wr_set_ud_addr,
 *    wr_set_xrc_srqn) fill in the slot taken last; inline data is copied
 *    during the call;
 *  - wr_complete checks the last slot, publishes the producer, drops the
 *    lock and rings the doorbell if the kernel asked for one, as
 *    ibv_post_send() does;
 *  - wr_abort moves the producer back and drops the lock.
 * The callbacks return nothing, so the first error of a batch (a full ring,
 * a bad SGE count, an atomic without its 8-byte SGE, a setter with no
 * operation) is kept and wr_complete returns it after discarding the whole
 * batch, as ibv_wr_post(3) specifies.  Nothing is visible to the kernel
 * before wr_complete publishes it, so discarding is moving the private
 * producer back.
 *
 * Operations the QP's type does not carry (UC: SENDs, WRITEs, binds and
 * LOCAL_INV; UD: SENDs; XRC send QPs: those of RC; an XRC receive QP has
 * no send queue, so none) or the device does not execute (TSO) are
 * refused when the QP is created (EOPNOTSUPP), so their
 * callbacks are never reached; a UD WR without wr_set_ud_addr fails
 * wr_complete (EINVAL), and so does wr_bind_mw of a type 1 window or
 * without an MR (type 1 windows are bound by ibv_bind_mw()).
 */
#include <errno.h>

#include "sroce.h"
#include "wq.h"

/*
 * The send_ops_flags each QP type supports: a datagram QP has no memory
 * operations (IBTA 11.4.1.1), SEND_WITH_INV, READs, atomics and ATOMIC
 * WRITE (IBTA A19.5) are RC's, and XRC's (a reliable connection too).
 */
#define SROCE_QP_EX_UD_OPS (IBV_QP_EX_WITH_SEND |			\
			    IBV_QP_EX_WITH_SEND_WITH_IMM)
#define SROCE_QP_EX_UC_OPS (SROCE_QP_EX_UD_OPS |			\
			    IBV_QP_EX_WITH_RDMA_WRITE |			\
			    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |		\
			    IBV_QP_EX_WITH_LOCAL_INV |			\
			    IBV_QP_EX_WITH_BIND_MW)
#define SROCE_QP_EX_RC_OPS (SROCE_QP_EX_UC_OPS |			\
			    IBV_QP_EX_WITH_SEND_WITH_INV |		\
			    IBV_QP_EX_WITH_RDMA_READ |			\
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		\
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |	\
			    IBV_QP_EX_WITH_ATOMIC_WRITE)

/* The comp_mask bits create_qp_ex accepts. */
#define SROCE_QP_EX_COMP_MASK (IBV_QP_INIT_ATTR_PD |			\
			       IBV_QP_INIT_ATTR_XRCD |			\
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

static void sroce_qpx_fail(struct sroce_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/* The slot built last is finished: check it. */
static void sroce_qpx_close(struct sroce_qp *qp)
{
	if (qp->wr_cur && !qp->wr_err && sroce_sq_check(qp, qp->wr_cur))
		sroce_qpx_fail(qp, EINVAL);
	qp->wr_cur = NULL;
}

/* Start a new WR; NULL once the batch has failed. */
static struct sroce_send_wqe *sroce_qpx_new(struct ibv_qp_ex *qpx,
					    enum ibv_wr_opcode opcode)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe;

	sroce_qpx_close(qp);
	if (qp->wr_err)
		return NULL;
	wqe = sroce_sq_take(qp, &qp->wr_room);
	if (!wqe) {
		sroce_qpx_fail(qp, ENOMEM);
		return NULL;
	}
	sroce_sq_set_op(wqe, qpx->wr_id, opcode, qpx->wr_flags);
	qp->wr_cur = wqe;
	return wqe;
}

/* The WR a setter applies to; NULL (and EINVAL) if there is none. */
static struct sroce_send_wqe *sroce_qpx_cur(struct sroce_qp *qp)
{
	if (qp->wr_err)
		return NULL;
	if (!qp->wr_cur)
		sroce_qpx_fail(qp, EINVAL);
	return qp->wr_cur;
}

/* -- Operations ------------------------------------------------------------ */

static void sroce_wr_send(struct ibv_qp_ex *qpx)
{
	sroce_qpx_new(qpx, IBV_WR_SEND);
}

static void sroce_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wqe)
		sroce_sq_set_ex(wqe, (uint32_t)imm_data);
}

static void sroce_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr)
{
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_RDMA_WRITE);

	if (wqe)
		sroce_sq_set_rdma(wqe, rkey, remote_addr);
}

static void sroce_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	struct sroce_send_wqe *wqe =
		sroce_qpx_new(qpx, IBV_WR_RDMA_WRITE_WITH_IMM);

	if (!wqe)
		return;
	sroce_sq_set_rdma(wqe, rkey, remote_addr);
	sroce_sq_set_ex(wqe, (uint32_t)imm_data);
}

static void sroce_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_RDMA_READ);

	if (wqe)
		sroce_sq_set_rdma(wqe, rkey, remote_addr);
}

static void sroce_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	struct sroce_send_wqe *wqe =
		sroce_qpx_new(qpx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (wqe)
		sroce_sq_set_atomic(wqe, rkey, remote_addr, compare, swap);
}

static void sroce_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	struct sroce_send_wqe *wqe =
		sroce_qpx_new(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (wqe)
		sroce_sq_set_atomic(wqe, rkey, remote_addr, add, 0);
}

/*
 * ATOMIC WRITE: the 8 bytes at atomic_wr are copied into the slot (inline),
 * as ibv_wr_atomic_write(3) lets the caller reuse them at once; a later
 * setter would replace them and must give 8 bytes too.
 */
static void sroce_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_ATOMIC_WRITE);

	if (!wqe)
		return;
	sroce_sq_set_rdma(wqe, rkey, remote_addr);
	if (!atomic_wr || sroce_sq_put_inline(qp, wqe, atomic_wr, 8))
		sroce_qpx_fail(qp, EINVAL);
}

/* SEND_WITH_INV and LOCAL_INV carry the rkey to invalidate in ex. */
static void sroce_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wqe)
		sroce_sq_set_ex(wqe, invalidate_rkey);
}

static void sroce_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct sroce_send_wqe *wqe = sroce_qpx_new(qpx, IBV_WR_LOCAL_INV);

	if (wqe)
		sroce_sq_set_ex(wqe, invalidate_rkey);
}

/*
 * As with ibv_post_send(), the application keeps the window's rkey: it is
 * rkey once the bind completes (ibv_wr_bind_mw(3) leaves mw->rkey alone).
 */
static void sroce_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe;

	if (!bind_info || sroce_sq_check_bind(mw, bind_info, false)) {
		sroce_qpx_close(qp);
		sroce_qpx_fail(qp, EINVAL);
		return;
	}
	wqe = sroce_qpx_new(qpx, IBV_WR_BIND_MW);
	if (wqe)
		sroce_sq_set_bind(wqe, mw, rkey, bind_info);
}

/* -- Setters --------------------------------------------------------------- */

static void sroce_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe = sroce_qpx_cur(qp);

	if (wqe && sroce_sq_put_sges(qp, wqe, sg_list, num_sge))
		sroce_qpx_fail(qp, EINVAL);
}

static void sroce_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr,
		.length = length,
		.lkey = lkey,
	};

	sroce_wr_set_sge_list(qpx, 1, &sge);
}

static void sroce_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe = sroce_qpx_cur(qp);
	size_t i;

	if (!wqe)
		return;
	sroce_sq_clear_data(wqe);
	for (i = 0; i < num_buf; i++) {
		if (sroce_sq_put_inline(qp, wqe, buf_list[i].addr,
					buf_list[i].length)) {
			sroce_qpx_fail(qp, EINVAL);
			return;
		}
	}
	/* no buffers at all is still inline (and empty) */
	sroce_sq_put_inline(qp, wqe, NULL, 0);
}

static void sroce_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	const struct ibv_data_buf buf = {
		.addr = addr,
		.length = length,
	};

	sroce_wr_set_inline_data_list(qpx, 1, &buf);
}

static void sroce_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	struct sroce_send_wqe *wqe = sroce_qpx_cur(qp);

	if (!wqe)
		return;
	if (!ah) {
		sroce_qpx_fail(qp, EINVAL);
		return;
	}
	sroce_sq_set_ud(wqe, to_sroce_ah(ah)->ahn, remote_qpn, remote_qkey);
}

static void sroce_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct sroce_send_wqe *wqe = sroce_qpx_cur(qpx_to_sroce_qp(qpx));

	if (wqe)
		sroce_sq_set_xrc(wqe, remote_srqn);
}

/* -- The batch ------------------------------------------------------------- */

static void sroce_wr_start(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);

	sroce_wq_lock(&qp->sq);
	qp->wr_first = qp->sq.producer;
	qp->wr_room = 0;
	qp->wr_err = 0;
	qp->wr_cur = NULL;
}

static void sroce_wr_abort(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);

	sroce_sq_rewind(qp, qp->wr_first);
	qp->wr_cur = NULL;
	sroce_wq_unlock(&qp->sq);
}

/* ibv_post_send()'s state rule applies too: nothing before RTS. */
static int sroce_wr_complete(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sroce_qp(qpx);
	bool posted;
	int err;

	sroce_qpx_close(qp);
	if (!qp->wr_err && !sroce_sq_open(qpx->qp_base.state))
		qp->wr_err = EINVAL;
	err = qp->wr_err;
	if (err) {
		sroce_wr_abort(qpx);
		return err;
	}
	posted = qp->sq.producer != qp->wr_first;
	if (posted)
		sroce_sq_publish(qp);
	sroce_wq_unlock(&qp->sq);
	return posted ? sroce_sq_ring(qp) : 0;
}

/* -- Creation -------------------------------------------------------------- */

/**
 * sroce_qp_ex_check - may a QP be created with these extended attributes?
 * @attr: create_qp_ex's attributes
 *
 * Return: 0, or EOPNOTSUPP for a comp_mask bit or a send operation the
 * device does not support.
 */
int sroce_qp_ex_check(const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = SROCE_QP_EX_RC_OPS;

	if (attr->comp_mask & ~SROCE_QP_EX_COMP_MASK)
		return EOPNOTSUPP;
	if (attr->qp_type == IBV_QPT_UC)
		ops = SROCE_QP_EX_UC_OPS;
	else if (attr->qp_type == IBV_QPT_UD)
		ops = SROCE_QP_EX_UD_OPS;
	else if (attr->qp_type == IBV_QPT_XRC_RECV &&
		 (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~ops))
		return EOPNOTSUPP;
	return 0;
}

/**
 * sroce_qp_ex_init - give a new QP its ibv_qp_ex, if it asked for one
 * @qp: the QP, created by the kernel
 * @attr: its attributes, checked by sroce_qp_ex_check()
 *
 * Every callback the QP's type can use is set, whichever operations the
 * application named: the flags are a promise about what it will use.
 */
void sroce_qp_ex_init(struct sroce_qp *qp,
		      const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *qpx = &qp->base_qp.qp_ex;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return;

	qpx->wr_send = sroce_wr_send;
	qpx->wr_send_imm = sroce_wr_send_imm;
	qpx->wr_set_sge = sroce_wr_set_sge;
	qpx->wr_set_sge_list = sroce_wr_set_sge_list;
	qpx->wr_set_inline_data = sroce_wr_set_inline_data;
	qpx->wr_set_inline_data_list = sroce_wr_set_inline_data_list;
	qpx->wr_start = sroce_wr_start;
	qpx->wr_complete = sroce_wr_complete;
	qpx->wr_abort = sroce_wr_abort;
	if (attr->qp_type == IBV_QPT_UD) {
		qpx->wr_set_ud_addr = sroce_wr_set_ud_addr;
	} else {
		qpx->wr_rdma_write = sroce_wr_rdma_write;
		qpx->wr_rdma_write_imm = sroce_wr_rdma_write_imm;
		qpx->wr_local_inv = sroce_wr_local_inv;
		qpx->wr_bind_mw = sroce_wr_bind_mw;
	}
	if (attr->qp_type == IBV_QPT_RC || attr->qp_type == IBV_QPT_XRC_SEND) {
		qpx->wr_rdma_read = sroce_wr_rdma_read;
		qpx->wr_atomic_cmp_swp = sroce_wr_atomic_cmp_swp;
		qpx->wr_atomic_fetch_add = sroce_wr_atomic_fetch_add;
		qpx->wr_atomic_write = sroce_wr_atomic_write;
		qpx->wr_send_inv = sroce_wr_send_inv;
	}
	/* Like other providers', only XRC send QPs have this setter. */
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		qpx->wr_set_xrc_srqn = sroce_wr_set_xrc_srqn;
	qp->base_qp.comp_mask |= VERBS_QP_EX;
}
