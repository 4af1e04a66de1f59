/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the objects: a QP changing state and a completion posted
 * to a CQ.  In the "sroce" system like the data path's (dp/trace.h; the
 * fields are in Documentation/admin-guide.md); the state changes are
 * emitted by the engine (dp/exec.c), which moves QPs for modify_qp and on
 * its own to ERR, the completions by sroce_cq_post().  As there, a
 * disabled event costs its static branch only.  kernel/obj/trace.c
 * creates them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

#if !defined(SROCE_OBJ_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SROCE_OBJ_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "core/rc.h"
#include "obj/cq.h"

/* sroce_qp_state's status and event when modify_qp moved the QP */
#define SROCE_QP_STATE_NO_CAUSE (-1)

TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);

#define sroce_show_qp_state(s)						\
	__print_symbolic(s, { IB_QPS_RESET, "RESET" },			\
			 { IB_QPS_INIT, "INIT" }, { IB_QPS_RTR, "RTR" },	\
			 { IB_QPS_RTS, "RTS" }, { IB_QPS_SQD, "SQD" },	\
			 { IB_QPS_SQE, "SQE" }, { IB_QPS_ERR, "ERR" })

TRACE_DEFINE_ENUM(SROCE_WC_SUCCESS);
TRACE_DEFINE_ENUM(SROCE_WC_LOC_LEN_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_LOC_QP_OP_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_LOC_PROT_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_WR_FLUSH_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_MW_BIND_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_BAD_RESP_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_LOC_ACCESS_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_REM_INV_REQ_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_REM_ACCESS_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_REM_OP_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_RNR_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_FATAL_ERR);
TRACE_DEFINE_ENUM(SROCE_WC_GENERAL_ERR);

/* the statuses sroce completes with, named as in enum ib_wc_status */
#define sroce_show_wc_status(s)					\
	__print_symbolic(s, { SROCE_QP_STATE_NO_CAUSE, "-" },		\
			 { SROCE_WC_SUCCESS, "SUCCESS" },		\
			 { SROCE_WC_LOC_LEN_ERR, "LOC_LEN_ERR" },	\
			 { SROCE_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" },	\
			 { SROCE_WC_LOC_PROT_ERR, "LOC_PROT_ERR" },	\
			 { SROCE_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" },	\
			 { SROCE_WC_MW_BIND_ERR, "MW_BIND_ERR" },	\
			 { SROCE_WC_BAD_RESP_ERR, "BAD_RESP_ERR" },	\
			 { SROCE_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR" },	\
			 { SROCE_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" },	\
			 { SROCE_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" },	\
			 { SROCE_WC_REM_OP_ERR, "REM_OP_ERR" },		\
			 { SROCE_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR" },	\
			 { SROCE_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR" }, \
			 { SROCE_WC_FATAL_ERR, "FATAL_ERR" },		\
			 { SROCE_WC_GENERAL_ERR, "GENERAL_ERR" })

TRACE_DEFINE_ENUM(IB_EVENT_QP_FATAL);
TRACE_DEFINE_ENUM(IB_EVENT_QP_REQ_ERR);
TRACE_DEFINE_ENUM(IB_EVENT_QP_ACCESS_ERR);

/*
 * A QP's state changed.  status and event say why the engine moved it to
 * ERR: the status of the completion that reports the error, or the
 * affiliated event that does (IBTA 11.6.3.1: no completion could); both
 * SROCE_QP_STATE_NO_CAUSE ("-") for a modify_qp.
 */
TRACE_EVENT(sroce_qp_state,
	TP_PROTO(const struct ib_qp *ibqp, enum ib_qp_state old,
		 enum ib_qp_state new, int status, int event),
	TP_ARGS(ibqp, old, new, status, event),

	TP_STRUCT__entry(
		__string(dev, dev_name(&ibqp->device->dev))
		__field(u32, qpn)
		__field(int, status)
		__field(int, event)
		__field(u8, old_state)
		__field(u8, new_state)
	),

	TP_fast_assign(
		sroce_assign_str(dev, dev_name(&ibqp->device->dev));
		__entry->qpn = ibqp->qp_num;
		__entry->status = status;
		__entry->event = event;
		__entry->old_state = old;
		__entry->new_state = new;
	),

	TP_printk("dev=%s qpn=0x%06x %s -> %s status=%s event=%s",
		  __get_str(dev), __entry->qpn,
		  sroce_show_qp_state(__entry->old_state),
		  sroce_show_qp_state(__entry->new_state),
		  sroce_show_wc_status(__entry->status),
		  __print_symbolic(__entry->event,
				   { SROCE_QP_STATE_NO_CAUSE, "-" },
				   { IB_EVENT_QP_FATAL, "QP_FATAL" },
				   { IB_EVENT_QP_REQ_ERR, "QP_REQ_ERR" },
				   { IB_EVENT_QP_ACCESS_ERR, "QP_ACCESS_ERR" }))
);

TRACE_DEFINE_ENUM(IB_WC_SEND);
TRACE_DEFINE_ENUM(IB_WC_RDMA_WRITE);
TRACE_DEFINE_ENUM(IB_WC_RDMA_READ);
TRACE_DEFINE_ENUM(IB_WC_COMP_SWAP);
TRACE_DEFINE_ENUM(IB_WC_FETCH_ADD);
TRACE_DEFINE_ENUM(IB_WC_BIND_MW);
TRACE_DEFINE_ENUM(IB_WC_LOCAL_INV);
TRACE_DEFINE_ENUM(IB_WC_REG_MR);
TRACE_DEFINE_ENUM(IB_WC_RECV);
TRACE_DEFINE_ENUM(IB_WC_RECV_RDMA_WITH_IMM);

/* A completion written to the CQ's ring (not one lost to a full CQ). */
TRACE_EVENT(sroce_cqe,
	TP_PROTO(const struct sroce_cq *cq, const struct sroce_cqe *cqe),
	TP_ARGS(cq, cqe),

	TP_STRUCT__entry(
		__string(dev, dev_name(&cq->ibcq.device->dev))
		__field(u64, wr_id)
		__field(u32, cqn)
		__field(u32, qpn)
		__field(u32, opcode)
		__field(u32, status)
		__field(u32, len)
	),

	TP_fast_assign(
		sroce_assign_str(dev, dev_name(&cq->ibcq.device->dev));
		__entry->wr_id = cqe->wr_id;
		__entry->cqn = cq->cqn;
		__entry->qpn = cqe->qp_num;
		__entry->opcode = cqe->opcode;
		__entry->status = cqe->status;
		__entry->len = cqe->byte_len;
	),

	TP_printk("dev=%s cqn=%u qpn=0x%06x wr_id=0x%llx opcode=%s status=%s len=%u",
		  __get_str(dev), __entry->cqn, __entry->qpn, __entry->wr_id,
		  __print_symbolic(__entry->opcode,
				   { IB_WC_SEND, "SEND" },
				   { IB_WC_RDMA_WRITE, "RDMA_WRITE" },
				   { IB_WC_RDMA_READ, "RDMA_READ" },
				   { IB_WC_COMP_SWAP, "COMP_SWAP" },
				   { IB_WC_FETCH_ADD, "FETCH_ADD" },
				   { IB_WC_BIND_MW, "BIND_MW" },
				   { IB_WC_LOCAL_INV, "LOCAL_INV" },
				   { IB_WC_REG_MR, "REG_MR" },
				   { IB_WC_RECV, "RECV" },
				   { IB_WC_RECV_RDMA_WITH_IMM, "RECV_RDMA_WITH_IMM" },
				   /* user QPs only (6.1's REG_MR is 8 too) */
				   { SROCE_UVERBS_WC_ATOMIC_WRITE, "ATOMIC_WRITE" },
				   { SROCE_UVERBS_WC_FLUSH, "FLUSH" }),
		  sroce_show_wc_status(__entry->status), __entry->len)
);

#endif /* SROCE_OBJ_TRACE_H */

/* define_trace.h includes this file again from the include path -Ikernel. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH obj
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
