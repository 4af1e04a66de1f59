// SPDX-License-Identifier: GPL-2.0
/*
 * Verbs that ib_core requires every device to provide (it refuses to register
 * one without them) but that sroce does not implement yet: completion queues,
 * queue pairs and memory regions come with the data path.  Creation fails
 * with -EOPNOTSUPP, as the verbs API specifies for an unsupported feature,
 * so the per-object operations can never be reached; they still refuse
 * rather than pretend to succeed.
 */
#include <rdma/ib_verbs.h>

#include "verbs.h"

static int sroce_create_cq(struct ib_cq *ibcq,
			   const struct ib_cq_init_attr *attr,
			   SROCE_CREATE_CQ_ARG *arg)
{
	return -EOPNOTSUPP;
}

static int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int sroce_poll_cq(struct ib_cq *ibcq, int num_entries,
			 struct ib_wc *wc)
{
	return -EOPNOTSUPP;
}

static int sroce_req_notify_cq(struct ib_cq *ibcq,
			       enum ib_cq_notify_flags flags)
{
	return -EOPNOTSUPP;
}

static int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			   int mask, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

static int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

static struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start,
				       u64 length, u64 iova, int access,
				       struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

const struct ib_device_ops sroce_unimplemented_ops = {
	.create_cq = sroce_create_cq,
	.destroy_cq = sroce_destroy_cq,
	.poll_cq = sroce_poll_cq,
	.req_notify_cq = sroce_req_notify_cq,
	.create_qp = sroce_create_qp,
	.modify_qp = sroce_modify_qp,
	.destroy_qp = sroce_destroy_qp,
	.post_send = sroce_post_send,
	.post_recv = sroce_post_recv,
	.get_dma_mr = sroce_get_dma_mr,
	.reg_user_mr = sroce_reg_user_mr,
	.dereg_mr = sroce_dereg_mr,

	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
};
