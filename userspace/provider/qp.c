// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: queue pairs, control path.
 *
 * The kernel allocates each QP's SQ and RQ rings and returns their keys and
 * geometry; the provider maps both right after creation and checks that the
 * header the kernel wrote matches the response, and that the capacities the
 * kernel granted (SGEs per WR, inline bytes) fit its slots, so that no later
 * slot index or WQE can address memory outside a slot or the mapping.
 * Which QP types and capacities are supported is the kernel's decision: the
 * provider passes every request on.
 *
 * Not every QP has both rings.  One with an SRQ has no RQ, nor has an XRC
 * send QP (it only sends).  An XRC receive QP has neither: it only
 * receives, into the XRC SRQ each message names, and ib_core creates it
 * without udata, so the kernel maps nothing and writes no driver tail;
 * likewise a QP opened by number (ibv_open_qp()), which reaches no driver
 * at all.  Such QPs still get the provider's object: modify, query and
 * destroy are plain commands.
 *
 * Posting work requests into the mapped rings, and the doorbells that wake
 * the kernel, are wq.c; the extended post API (ibv_qp_ex) is qp_ex.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "abi.h"
#include "ring.h"
#include "sroce.h"

/*
 * Map a QP's or SRQ's work queue ring.  A slot of 1 << shift bytes must
 * hold a header of hdr bytes and max_sge SGEs (at least one), and the ring
 * at least min_slots slots.  The producer starts where the kernel put it.
 */
int sroce_wq_map(struct sroce_context *ctx, struct sroce_wq *wq, uint64_t key,
		 uint32_t len, uint32_t slots, uint32_t shift, size_t hdr,
		 uint32_t max_sge, uint32_t min_slots)
{
	size_t need = hdr + (size_t)(max_sge ? max_sge : 1) *
			    sizeof(struct sroce_sge);
	struct sroce_ring_hdr *ring;

	ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ctx->base_ctx.context.cmd_fd, (off_t)key);
	if (ring == MAP_FAILED)
		return errno;

	if (ring->num_slots != slots || ring->slot_shift != shift ||
	    !sroce_ring_size_ok(slots) || shift > 12 ||
	    ((size_t)1 << shift) < need || slots < min_slots ||
	    sroce_ring_bytes(slots, shift, SROCE_RING_SLOTS_OFFSET) > len) {
		munmap(ring, len);
		return EPROTO;
	}
	wq->ring = ring;
	wq->map_len = len;
	wq->num_slots = slots;
	wq->slot_shift = shift;
	wq->max_sge = max_sge;
	wq->producer = sroce_ring_load_acquire(&ring->producer);
	return 0;
}

void sroce_wq_unmap(struct sroce_wq *wq)
{
	if (wq->ring)
		munmap(wq->ring, wq->map_len);
	wq->ring = NULL;
}

/* Inline bytes take the place of the SGEs after an SQ slot's header. */
static bool sroce_qp_inline_fits(const struct sroce_wq *sq, uint32_t bytes)
{
	return sizeof(struct sroce_send_wqe) + (size_t)bytes <=
	       (size_t)1 << sq->slot_shift;
}

/* The rings the kernel made: an SQ, and an RQ only if has_rq. */
static int sroce_qp_map(struct sroce_context *ctx, struct sroce_qp *qp,
			const struct sroce_create_qp_resp *resp,
			const struct ibv_qp_cap *cap, bool has_rq)
{
	int ret;

	ret = sroce_wq_map(ctx, &qp->sq, resp->sq_mmap_key, resp->sq_mmap_len,
			   resp->sq_slots, resp->sq_slot_shift,
			   sizeof(struct sroce_send_wqe), cap->max_send_sge,
			   cap->max_send_wr);
	if (ret)
		goto err;
	if (has_rq)
		ret = sroce_wq_map(ctx, &qp->rq, resp->rq_mmap_key,
				   resp->rq_mmap_len, resp->rq_slots,
				   resp->rq_slot_shift,
				   sizeof(struct sroce_recv_wqe),
				   cap->max_recv_sge, cap->max_recv_wr);
	if (ret)
		goto err_sq;
	ret = EPROTO;
	if (!sroce_qp_inline_fits(&qp->sq, resp->max_inline_data))
		goto err_rq;
	qp->max_inline_data = resp->max_inline_data;
	return 0;

err_rq:
	sroce_wq_unmap(&qp->rq);
err_sq:
	sroce_wq_unmap(&qp->sq);
err:
	if (ret == EPROTO)
		sroce_err(ctx, "QP %u: bad ring geometry", resp->qpn);
	return ret;
}

static void sroce_qp_free(struct sroce_qp *qp)
{
	pthread_spin_destroy(&qp->rq.lock);
	pthread_spin_destroy(&qp->sq.lock);
	free(qp);
}

static struct sroce_qp *sroce_qp_alloc(void)
{
	struct sroce_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ret = pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;
	ret = pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_sq;
	return qp;

err_sq:
	pthread_spin_destroy(&qp->sq.lock);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

/*
 * The kernel's QP, and its rings if it has any.  An XRC receive QP is
 * made by ib_core without udata: the driver writes no tail, so none is
 * asked for, and there is nothing to map.
 */
static int sroce_qp_make(struct sroce_context *ctx, struct sroce_qp *qp,
			 struct ibv_qp_init_attr_ex *attr)
{
	struct verbs_cmd_create_qp cmd = {};
	union sroce_create_qp_reply reply = {};
	bool xrc_recv = attr->qp_type == IBV_QPT_XRC_RECV;
	size_t reply_len = xrc_recv ? sizeof(reply.core) : sizeof(reply);
	int ret;

	/* Writes the capacities the kernel granted back into attr->cap. */
	ret = ibv_cmd_create_qp_ex(&ctx->base_ctx.context, &qp->base_qp, attr,
				   &cmd, sizeof(cmd), &reply.core, reply_len);
	if (ret || xrc_recv)
		return ret;

	ret = sroce_qp_map(ctx, qp, &reply.tail.drv, &attr->cap,
			   !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND);
	/* If the destroy fails too, the context's close reaps the QP. */
	if (ret)
		ibv_cmd_destroy_qp(&qp->base_qp.qp);
	return ret;
}

struct ibv_qp *sroce_qp_create_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct sroce_qp *qp;
	int ret;

	/* The extended post API's operations are checked here (qp_ex.c). */
	ret = sroce_qp_ex_check(attr);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = sroce_qp_alloc();
	if (!qp)
		return NULL;
	ret = sroce_qp_make(to_sroce_ctx(ibctx), qp, attr);
	if (ret) {
		sroce_qp_free(qp);
		errno = ret;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) &&
	    sroce_pd_single_thread(attr->pd))
		qp->sq.single_thread = qp->rq.single_thread = true;
	sroce_qp_ex_init(qp, attr);
	return &qp->base_qp.qp;
}

/*
 * ibv_open_qp(): another handle on an XRC receive QP of the XRC domain, by
 * number.  OPEN_QP reaches no driver: no rings, no driver tail.
 */
struct ibv_qp *sroce_qp_open(struct ibv_context *ibctx,
			     struct ibv_qp_open_attr *attr)
{
	struct verbs_cmd_open_qp cmd = {};
	struct ib_uverbs_create_qp_resp resp = {};
	struct sroce_qp *qp;
	int ret;

	qp = sroce_qp_alloc();
	if (!qp)
		return NULL;
	ret = ibv_cmd_open_qp(ibctx, &qp->base_qp, sizeof(qp->base_qp), attr,
			      &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		sroce_qp_free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->base_qp.qp;
}

struct ibv_qp *sroce_qp_create(struct ibv_pd *ibpd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ibpd,
	};
	struct ibv_qp *qp;

	qp = sroce_qp_create_ex(ibpd->context, &attr_ex);
	if (qp)
		attr->cap = attr_ex.cap;	/* the capacities granted */
	return qp;
}

int sroce_qp_modify(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct verbs_cmd_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

int sroce_qp_query(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct verbs_cmd_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/* The QP's completions still in its CQs (sroce_cq_discard_qp()). */
static void sroce_qp_discard_cqes(struct ibv_qp *ibqp)
{
	if (ibqp->send_cq)
		sroce_cq_discard_qp(to_sroce_cq(ibqp->send_cq), ibqp->qp_num);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		sroce_cq_discard_qp(to_sroce_cq(ibqp->recv_cq), ibqp->qp_num);
}

/*
 * The kernel stops using the rings before DESTROY_QP returns, so they are
 * unmapped only then; on failure the QP stays whole.  Its completions
 * still in its CQs go then too.  An XRC receive QP has no CQs (libibverbs
 * copies whatever the application passed, which the kernel ignored): its
 * receives complete on the CQs of the XRC SRQs they took WQEs from, and
 * its kernel QP may live on for other handles (ibv_open_qp()), so they
 * stay.
 */
int sroce_qp_destroy(struct ibv_qp *ibqp)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	if (ibqp->qp_type != IBV_QPT_XRC_RECV)
		sroce_qp_discard_cqes(ibqp);
	sroce_wq_unmap(&qp->rq);
	sroce_wq_unmap(&qp->sq);
	sroce_qp_free(qp);
	return 0;
}
