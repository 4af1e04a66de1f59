// SPDX-License-Identifier: GPL-2.0
/*
 * Verbs that ib_core requires every device to provide (it refuses to register
 * one without them) but that sroce does not implement yet: queue pairs come
 * with the data path.  Creation fails
 * with -EOPNOTSUPP, as the verbs API specifies for an unsupported feature,
 * so the per-object operations can never be reached; they still refuse
 * rather than pretend to succeed.
 */
#include <rdma/ib_verbs.h>

#include "verbs.h"

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

const struct ib_device_ops sroce_unimplemented_ops = {
	.create_qp = sroce_create_qp,
	.modify_qp = sroce_modify_qp,
	.destroy_qp = sroce_destroy_qp,
	.post_send = sroce_post_send,
	.post_recv = sroce_post_recv,

	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
};
