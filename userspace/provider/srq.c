// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: shared receive queues, control path.
 *
 * The kernel allocates each SRQ's ring and returns its key and geometry;
 * the provider maps it right after creation and checks it as it does a
 * QP's RQ (qp.c): the header must match the response and the capacities
 * the kernel granted must fit the slots.  Posting into the ring is wq.c.
 * Which capacities and limits are supported is the kernel's decision: the
 * provider passes every request on.  A resize maps the new ring the
 * kernel made and unmaps the old one (sroce_srq_resize()).
 *
 * An XRC SRQ (ibv_create_srq_ex) is the same object with the same ring
 * and the same driver tail; it also has the number ib_core returns
 * (libibverbs keeps it in the verbs_srq), which senders name in their
 * WQEs and which must be the driver's srqn.  Tag-matching SRQs are not
 * supported (EOPNOTSUPP).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "abi.h"
#include "sroce.h"

static struct sroce_srq *sroce_srq_alloc(void)
{
	struct sroce_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	return srq;
}

static void sroce_srq_free(struct sroce_srq *srq)
{
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
}

/*
 * The kernel made the SRQ with the capacities in cap: map its ring.  On
 * failure the kernel's SRQ is destroyed again (if that fails too, the
 * context's close reaps it).
 */
static int sroce_srq_setup(struct sroce_context *ctx, struct sroce_srq *srq,
			   const struct sroce_create_srq_resp *drv,
			   const struct ibv_srq_attr *cap, struct ibv_pd *pd)
{
	const struct verbs_srq *vsrq = &srq->base_vsrq;
	int ret = EPROTO;

	if (vsrq->srq_type != IBV_SRQT_XRC || vsrq->srq_num == drv->srqn)
		ret = sroce_wq_map(ctx, &srq->rq, drv->mmap_key, drv->mmap_len,
				   drv->slots, drv->slot_shift,
				   sizeof(struct sroce_recv_wqe), cap->max_sge,
				   cap->max_wr);
	if (ret) {
		if (ret == EPROTO)
			sroce_err(ctx, "SRQ %u: bad ring geometry or number",
				  drv->srqn);
		ibv_cmd_destroy_srq(&srq->base_vsrq.srq);
		return ret;
	}
	srq->srqn = drv->srqn;
	srq->rq.single_thread = sroce_pd_single_thread(pd);
	return 0;
}

struct ibv_srq *sroce_srq_create(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr)
{
	struct sroce_context *ctx = to_sroce_ctx(ibpd->context);
	struct verbs_cmd_create_srq cmd = {};
	union sroce_create_srq_reply reply = {};
	struct sroce_srq *srq;
	int ret;

	srq = sroce_srq_alloc();
	if (!srq)
		return NULL;

	/* Writes the capacities the kernel granted back into attr->attr. */
	ret = ibv_cmd_create_srq(ibpd, &srq->base_vsrq.srq, attr, &cmd,
				 sizeof(cmd), &reply.core, sizeof(reply));
	if (!ret)
		ret = sroce_srq_setup(ctx, srq, &reply.tail.drv, &attr->attr,
				      ibpd);
	if (ret) {
		sroce_srq_free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->base_vsrq.srq;
}

/*
 * The request as libibverbs is to send it: the type always given, since
 * its write path reads srq_type even when the TYPE bit is clear.
 */
static int sroce_srq_request(const struct ibv_srq_init_attr_ex *attr,
			     struct ibv_srq_init_attr_ex *req)
{
	*req = *attr;
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		req->srq_type = IBV_SRQT_BASIC;
	req->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
	if (req->srq_type != IBV_SRQT_BASIC && req->srq_type != IBV_SRQT_XRC)
		return EOPNOTSUPP;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM)
		return EOPNOTSUPP;
	return 0;
}

/*
 * ibv_create_srq_ex(): basic and XRC SRQs.  libibverbs checks the
 * comp_mask (PD always; XRCD and CQ for XRC) and, unlike
 * ibv_create_srq(), leaves the ibv_srq's srq_context and pd to the
 * provider.
 */
struct ibv_srq *sroce_srq_create_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct sroce_context *ctx = to_sroce_ctx(ibctx);
	struct verbs_cmd_create_xsrq cmd = {};
	union sroce_create_srq_reply reply = {};
	struct ibv_srq_init_attr_ex req;
	struct sroce_srq *srq;
	int ret;

	ret = sroce_srq_request(attr, &req);
	if (ret) {
		errno = ret;
		return NULL;
	}
	srq = sroce_srq_alloc();
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq_ex(ibctx, &srq->base_vsrq, &req, &cmd,
				    sizeof(cmd), &reply.core, sizeof(reply));
	if (!ret)
		ret = sroce_srq_setup(ctx, srq, &reply.tail.drv, &req.attr,
				      req.pd);
	if (ret) {
		sroce_srq_free(srq);
		errno = ret;
		return NULL;
	}
	attr->attr.max_wr = req.attr.max_wr;	/* the capacities granted */
	attr->attr.max_sge = req.attr.max_sge;
	srq->base_vsrq.srq.srq_context = attr->srq_context;
	srq->base_vsrq.srq.pd = attr->pd;
	return &srq->base_vsrq.srq;
}

/*
 * The SRQ's number: for an XRC SRQ the one ib_core returned, which create
 * checked is the driver's; a basic SRQ has the driver's too.
 */
int sroce_srq_get_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_sroce_srq(ibsrq)->srqn;
	return 0;
}

/*
 * A resize: the kernel copies the WQEs not yet taken into a new ring at the
 * same counters, swaps rings and writes the new ring's key and geometry to
 * resp; the old ring then receives nothing more and is unmapped here.  The
 * ring lock keeps this process's posters off both rings meanwhile (the
 * kernel reads the producer from the old one).  If the new ring cannot be
 * mapped after the kernel swapped, the SRQ is lost to this process (an
 * error is logged; posts go to the old ring, which nobody reads); it can
 * still be destroyed.
 */
static int sroce_srq_resize(struct sroce_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct sroce_context *ctx = to_sroce_ctx(srq->base_vsrq.srq.context);
	struct sroce_modify_srq_req req = {};
	struct sroce_create_srq_resp resp = {};
	struct sroce_wq *rq = &srq->rq;
	struct sroce_wq next = {};
	int ret;

	req.drv.resp_addr = (uintptr_t)&resp;
	pthread_spin_lock(&rq->lock);
	ret = ibv_cmd_modify_srq(&srq->base_vsrq.srq, attr, attr_mask,
				 &req.core, sizeof(req));
	if (ret)
		goto out;
	ret = EPROTO;
	if (resp.srqn == srq->srqn && resp.slot_shift == rq->slot_shift)
		ret = sroce_wq_map(ctx, &next, resp.mmap_key, resp.mmap_len,
				   resp.slots, resp.slot_shift,
				   sizeof(struct sroce_recv_wqe), rq->max_sge,
				   attr->max_wr);
	if (ret) {
		sroce_err(ctx, "SRQ %u: resized ring not mapped (%d)",
			  srq->srqn, ret);
		goto out;
	}
	sroce_wq_unmap(rq);
	rq->ring = next.ring;
	rq->map_len = next.map_len;
	rq->num_slots = next.num_slots;
	/* the kernel carried the producer over, as this one published it */
	rq->producer = next.producer;
out:
	pthread_spin_unlock(&rq->lock);
	return ret;
}

int sroce_srq_modify(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct verbs_cmd_modify_srq cmd = {};

	if (attr_mask & IBV_SRQ_MAX_WR)
		return sroce_srq_resize(to_sroce_srq(ibsrq), attr, attr_mask);
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int sroce_srq_query(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct verbs_cmd_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

/*
 * The kernel stops using the ring before DESTROY_SRQ returns, so it is
 * unmapped only then; on failure (EBUSY: QPs still use it) the SRQ stays
 * whole.
 */
int sroce_srq_destroy(struct ibv_srq *ibsrq)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	sroce_wq_unmap(&srq->rq);
	sroce_srq_free(srq);
	return 0;
}
