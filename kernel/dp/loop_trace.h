/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of same-host delivery (kernel/dp/loop.c).  Packets that take
 * the shortcut never pass a netdev, so packet capture cannot see them; this
 * event is how they are observed:
 *   echo 1 > /sys/kernel/tracing/events/sroce/sroce_loopback_pkt/enable
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

#if !defined(SROCE_LOOP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SROCE_LOOP_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(sroce_loopback_pkt,
	TP_PROTO(u32 src_qpn, u32 dst_qpn, u8 opcode, u32 psn, u32 len,
		 bool icrc),
	TP_ARGS(src_qpn, dst_qpn, opcode, psn, len, icrc),

	TP_STRUCT__entry(
		__field(u32, src_qpn)
		__field(u32, dst_qpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
		__field(bool, icrc)
	),

	TP_fast_assign(
		__entry->src_qpn = src_qpn;
		__entry->dst_qpn = dst_qpn;
		__entry->psn = psn;
		__entry->len = len;
		__entry->opcode = opcode;
		__entry->icrc = icrc;
	),

	TP_printk("src_qpn=0x%06x dst_qpn=0x%06x opcode=0x%02x psn=0x%06x len=%u icrc=%d",
		  __entry->src_qpn, __entry->dst_qpn, __entry->opcode,
		  __entry->psn, __entry->len, __entry->icrc)
);

#endif /* SROCE_LOOP_TRACE_H */

/* define_trace.h includes this file again from the include path -Ikernel. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH dp
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE loop_trace
#include <trace/define_trace.h>
