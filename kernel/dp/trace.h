/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the data path: packets sent and received, received
 * packets dropped, and retransmissions.  They are in the "sroce" system
 * (/sys/kernel/tracing/events/sroce/, perf's sroce:*, bpftrace's
 * tracepoint:sroce:*); Documentation/admin-guide.md lists their fields.
 * A disabled tracepoint is a static branch around the call: the arguments
 * are pointers and values at hand, and everything else (reading the BTH,
 * naming the device and the reason) happens in TP_fast_assign, only while
 * the event is enabled.  kernel/dp/trace.c creates them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

/* once, not with the events in each stage of define_trace.h */
#ifndef SROCE_DP_TRACE_HELPERS_H
#define SROCE_DP_TRACE_HELPERS_H

#include "device.h"

/* The name the device has now; "-" for a datagram of no sroce device. */
static inline const char *sroce_trace_dev_name(const struct sroce_dev *sdev)
{
	return sdev ? dev_name(&sdev->ibdev.dev) : "-";
}
#endif

#if !defined(SROCE_DP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SROCE_DP_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

#include "core/hdr.h"
#include "dp/comp.h"

/*
 * A packet handed to the IP stack or to same-host delivery
 * (sroce_net_xmit()); a failure after that shows in the tx_err_ counters.
 * len is the BTH through the ICRC, as sent_bytes counts it.
 */
TRACE_EVENT(sroce_tx,
	TP_PROTO(const struct ib_qp *ibqp, const u8 *bth, u32 len),
	TP_ARGS(ibqp, bth, len),

	TP_STRUCT__entry(
		__string(dev, dev_name(&ibqp->device->dev))
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
	),

	TP_fast_assign(
		sroce_assign_str(dev, dev_name(&ibqp->device->dev));
		__entry->qpn = ibqp->qp_num;
		__entry->dqpn = sroce_bth_qpn(bth);
		__entry->psn = sroce_bth_psn(bth);
		__entry->len = len;
		__entry->opcode = sroce_bth_opcode(bth);
	),

	TP_printk("dev=%s qpn=0x%06x dqpn=0x%06x opcode=0x%02x psn=0x%06x len=%u",
		  __get_str(dev), __entry->qpn, __entry->dqpn,
		  __entry->opcode, __entry->psn, __entry->len)
);

/*
 * A datagram whose headers and ICRC are valid, before its QP is looked up
 * (as rcvd_pkts counts it): qpn is the BTH's destination QP.
 */
TRACE_EVENT(sroce_rx,
	TP_PROTO(const struct sroce_dev *sdev, const u8 *bth, u32 len),
	TP_ARGS(sdev, bth, len),

	TP_STRUCT__entry(
		__string(dev, dev_name(&sdev->ibdev.dev))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
	),

	TP_fast_assign(
		sroce_assign_str(dev, dev_name(&sdev->ibdev.dev));
		__entry->qpn = sroce_bth_qpn(bth);
		__entry->psn = sroce_bth_psn(bth);
		__entry->len = len;
		__entry->opcode = sroce_bth_opcode(bth);
	),

	TP_printk("dev=%s qpn=0x%06x opcode=0x%02x psn=0x%06x len=%u",
		  __get_str(dev), __entry->qpn, __entry->opcode,
		  __entry->psn, __entry->len)
);

/*
 * A received packet dropped, where it is counted (stats.h): reason is the
 * name of its rx_drop_ counter (sroce_stats_drop_name(), stats.c); qpn
 * the QP it was for, SROCE_DROP_NO_QPN before one was known.
 */
TRACE_EVENT(sroce_rx_drop,
	TP_PROTO(const struct sroce_dev *sdev, u32 qpn, unsigned int why),
	TP_ARGS(sdev, qpn, why),

	TP_STRUCT__entry(
		__string(dev, sroce_trace_dev_name(sdev))
		__string(reason, sroce_stats_drop_name(why))
		__field(u32, qpn)
	),

	TP_fast_assign(
		sroce_assign_str(dev, sroce_trace_dev_name(sdev));
		sroce_assign_str(reason, sroce_stats_drop_name(why));
		__entry->qpn = qpn;
	),

	TP_printk("dev=%s qpn=0x%06x reason=%s",
		  __get_str(dev), __entry->qpn, __get_str(reason))
);

TRACE_DEFINE_ENUM(SROCE_COMP_RETX_TIMEOUT);
TRACE_DEFINE_ENUM(SROCE_COMP_RETX_SEQ_NAK);
TRACE_DEFINE_ENUM(SROCE_COMP_RETX_RNR_NAK);
TRACE_DEFINE_ENUM(SROCE_COMP_RETX_IMPLICIT);

/*
 * An RC requester goes back to psn and sends [psn, end) again (after the
 * RNR wait for an RNR NAK); left is what remains of the retry count that
 * cause consumes (retry_cnt or rnr_retry; the implicit NAK of a lost
 * response consumes none).
 */
TRACE_EVENT(sroce_retransmit,
	TP_PROTO(const struct ib_qp *ibqp, enum sroce_comp_retx cause,
		 u32 psn, u32 end, u8 left),
	TP_ARGS(ibqp, cause, psn, end, left),

	TP_STRUCT__entry(
		__string(dev, dev_name(&ibqp->device->dev))
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, end)
		__field(u8, cause)
		__field(u8, left)
	),

	TP_fast_assign(
		sroce_assign_str(dev, dev_name(&ibqp->device->dev));
		__entry->qpn = ibqp->qp_num;
		__entry->psn = psn;
		__entry->end = end;
		__entry->cause = cause;
		__entry->left = left;
	),

	TP_printk("dev=%s qpn=0x%06x cause=%s psn=0x%06x end=0x%06x left=%u",
		  __get_str(dev), __entry->qpn,
		  __print_symbolic(__entry->cause,
				   { SROCE_COMP_RETX_TIMEOUT, "timeout" },
				   { SROCE_COMP_RETX_SEQ_NAK, "seq_nak" },
				   { SROCE_COMP_RETX_RNR_NAK, "rnr_nak" },
				   { SROCE_COMP_RETX_IMPLICIT, "implicit_nak" }),
		  __entry->psn, __entry->end, __entry->left)
);

#endif /* SROCE_DP_TRACE_H */

/* define_trace.h includes this file again from the include path -Ikernel. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH dp
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
