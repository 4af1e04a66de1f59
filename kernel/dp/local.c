// SPDX-License-Identifier: GPL-2.0
/*
 * Local operations of the send queue: memory window binds, LOCAL_INV and
 * (kernel QPs only) fast registration.  They send no packets; the requester
 * (kernel/req.c) executes each when its turn in SQ order comes, that is
 * once every earlier WQE has been transmitted, and a fenced one only when
 * no earlier READ or atomic is outstanding.  Their completions are retired
 * in order like any other WQE's.  A failure completes the WQE with
 * MW_BIND_ERR, which the verbs use for memory management operations, and
 * puts the QP in the error state.
 */
#include <rdma/ib_verbs.h>

#include "device.h"
#include "dp/local.h"
#include "obj/mr.h"
#include "obj/mw.h"
#include "obj/qp.h"

/**
 * sroce_local_op - is @opcode a local operation this QP may post?
 * @qp: the QP: RC or UC; IB_WR_REG_MR names a kernel MR, so a user QP may
 *	not use it
 * @opcode: the WQE's opcode
 * @wc_opcode: set to the completion opcode if it is one
 */
bool sroce_local_op(const struct sroce_qp *qp, u32 opcode, u8 *wc_opcode)
{
	/* datagram QPs have no memory operations (IBTA 11.4.1.1) */
	if (sroce_qp_is_ud(qp))
		return false;
	switch (opcode) {
	case IB_UVERBS_WR_BIND_MW:
		*wc_opcode = IB_UVERBS_WC_BIND_MW;
		return true;
	case IB_UVERBS_WR_LOCAL_INV:
		*wc_opcode = IB_UVERBS_WC_LOCAL_INV;
		return true;
	case IB_WR_REG_MR:
		*wc_opcode = IB_WC_REG_MR;
		return !qp->user;
	default:
		return false;
	}
}

/**
 * sroce_local_execute - carry out a local operation
 * @qp: the QP, in RTS; qp->exec_lock held
 * @wqe: the requester's copy of the WQE
 *
 * Return: the WQE's completion status.
 */
enum sroce_wc_status sroce_local_execute(struct sroce_qp *qp,
					 const struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	int err;

	lockdep_assert_held(&qp->exec_lock);
	switch (wqe->opcode) {
	case IB_UVERBS_WR_BIND_MW:
		return sroce_mw_bind(qp, wqe);
	case IB_UVERBS_WR_LOCAL_INV:
		err = sroce_mw_invalidate(qp, wqe->ex, false);
		break;
	case IB_WR_REG_MR:
		if (qp->user)
			return SROCE_WC_LOC_QP_OP_ERR;
		err = sroce_mr_fast_reg(sdev, qp->ibqp.pd, wqe->wr.reg.key,
					wqe->wr.reg.access);
		break;
	default:
		return SROCE_WC_LOC_QP_OP_ERR;
	}
	return err ? SROCE_WC_MW_BIND_ERR : SROCE_WC_SUCCESS;
}
