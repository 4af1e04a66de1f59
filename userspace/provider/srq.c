// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: shared receive queues, control path.
 *
 * The kernel allocates each SRQ's ring and returns its key and geometry;
 * the provider maps it right after creation and checks it as it does a
 * QP's RQ (qp.c): the header must match the response and the capacities
 * the kernel granted must fit the slots.  Posting into the ring is wq.c.
 * Which SRQ types, capacities and limits are supported is the kernel's
 * decision: the provider passes every request on.  A resize maps the new
 * ring the kernel made and unmaps the old one (sroce_srq_resize()).  XRC
 * SRQs would come through create_srq_ex, which sroce does not provide, so
 * libibverbs refuses them with EOPNOTSUPP.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "abi.h"
#include "sroce.h"

struct ibv_srq *sroce_srq_create(struct ibv_pd *ibpd,
				 struct ibv_srq_init_attr *attr)
{
	struct sroce_context *ctx = to_sroce_ctx(ibpd->context);
	struct verbs_cmd_create_srq cmd = {};
	union sroce_create_srq_reply reply = {};
	const struct sroce_create_srq_resp *drv = &reply.tail.drv;
	struct sroce_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	if (ret)
		goto err_free;

	/* Writes the capacities the kernel granted back into attr->attr. */
	ret = ibv_cmd_create_srq(ibpd, &srq->base_srq, attr, &cmd, sizeof(cmd),
				 &reply.core, sizeof(reply));
	if (ret)
		goto err_lock;

	ret = sroce_wq_map(ctx, &srq->rq, drv->mmap_key, drv->mmap_len,
			   drv->slots, drv->slot_shift,
			   sizeof(struct sroce_recv_wqe), attr->attr.max_sge,
			   attr->attr.max_wr);
	if (ret) {
		if (ret == EPROTO)
			sroce_err(ctx, "SRQ %u: bad ring geometry", drv->srqn);
		goto err_destroy;
	}
	srq->srqn = drv->srqn;
	srq->rq.single_thread = sroce_pd_single_thread(ibpd);
	return &srq->base_srq;

err_destroy:
	/* Nothing to do if this fails too: the context's close reaps it. */
	ibv_cmd_destroy_srq(&srq->base_srq);
err_lock:
	pthread_spin_destroy(&srq->rq.lock);
err_free:
	free(srq);
	errno = ret;
	return NULL;
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
	struct sroce_context *ctx = to_sroce_ctx(srq->base_srq.context);
	struct sroce_modify_srq_req req = {};
	struct sroce_create_srq_resp resp = {};
	struct sroce_wq *rq = &srq->rq;
	struct sroce_wq next = {};
	int ret;

	req.drv.resp_addr = (uintptr_t)&resp;
	pthread_spin_lock(&rq->lock);
	ret = ibv_cmd_modify_srq(&srq->base_srq, attr, attr_mask, &req.core,
				 sizeof(req));
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
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}
