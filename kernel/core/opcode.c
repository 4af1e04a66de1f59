// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The opcode table: one row per known opcode, indexed by the opcode itself so
 * a lookup is a single load.  Header offsets and lengths are computed here at
 * compile time from the set of extension headers (their wire order is fixed,
 * see enum sroce_ext), so a row cannot state a length that disagrees with its
 * headers.
 */
#include "opcode.h"
#include "hdr.h"

/* Bytes of extension header e in header set h. */
#define HLEN(h, e, len)	(((h) & SROCE_HDR(SROCE_EXT_##e)) ? (len) : 0)

/* Offset at which each header starts if present, from the BTH. */
#define AT_DETH(h)	SROCE_BTH_LEN
#define AT_XRCETH(h)	(AT_DETH(h) + HLEN(h, DETH, SROCE_DETH_LEN))
#define AT_FETH(h)	(AT_XRCETH(h) + HLEN(h, XRCETH, SROCE_XRCETH_LEN))
#define AT_RETH(h)	(AT_FETH(h) + HLEN(h, FETH, SROCE_FETH_LEN))
#define AT_ATOMIC(h)	(AT_RETH(h) + HLEN(h, RETH, SROCE_RETH_LEN))
#define AT_AETH(h)	(AT_ATOMIC(h) + \
			 HLEN(h, ATOMIC_ETH, SROCE_ATOMIC_ETH_LEN))
#define AT_AACK(h)	(AT_AETH(h) + HLEN(h, AETH, SROCE_AETH_LEN))
#define AT_IMMDT(h)	(AT_AACK(h) + \
			 HLEN(h, ATOMIC_ACK_ETH, SROCE_ATOMIC_ACK_ETH_LEN))
#define AT_IETH(h)	(AT_IMMDT(h) + HLEN(h, IMMDT, SROCE_IMMDT_LEN))
#define AT_CNP(h)	(AT_IETH(h) + HLEN(h, IETH, SROCE_IETH_LEN))
#define AT_END(h)	(AT_CNP(h) + HLEN(h, CNP, SROCE_CNP_RSVD_LEN))

#define OFF(h, e, at)	(((h) & SROCE_HDR(SROCE_EXT_##e)) ? at(h) : 0)

#define OP(code, tr, kd, rp, h, f)					\
	[SROCE_OP_##code] = {						\
		.name = #code,						\
		.opcode = SROCE_OP_##code,				\
		.transport = SROCE_TRANSPORT_##tr,			\
		.kind = SROCE_KIND_##kd,				\
		.reply = SROCE_REPLY_##rp,				\
		.hdrs = (h),						\
		.flags = (f),						\
		.hdr_len = AT_END(h),					\
		.off = {						\
			[SROCE_EXT_DETH] = OFF(h, DETH, AT_DETH),	\
			[SROCE_EXT_XRCETH] = OFF(h, XRCETH, AT_XRCETH),	\
			[SROCE_EXT_FETH] = OFF(h, FETH, AT_FETH),	\
			[SROCE_EXT_RETH] = OFF(h, RETH, AT_RETH),	\
			[SROCE_EXT_ATOMIC_ETH] =			\
				OFF(h, ATOMIC_ETH, AT_ATOMIC),		\
			[SROCE_EXT_AETH] = OFF(h, AETH, AT_AETH),	\
			[SROCE_EXT_ATOMIC_ACK_ETH] =			\
				OFF(h, ATOMIC_ACK_ETH, AT_AACK),	\
			[SROCE_EXT_IMMDT] = OFF(h, IMMDT, AT_IMMDT),	\
			[SROCE_EXT_IETH] = OFF(h, IETH, AT_IETH),	\
			[SROCE_EXT_CNP] = OFF(h, CNP, AT_CNP),		\
		},							\
	}

#define REQ	SROCE_OPF_REQUEST
#define RSP	SROCE_OPF_RESPONSE
#define PL	SROCE_OPF_PAYLOAD
#define FIRST	SROCE_OPF_FIRST
#define MIDDLE	SROCE_OPF_MIDDLE
#define LAST	SROCE_OPF_LAST
#define ONLY	SROCE_OPF_ONLY
#define IMM	SROCE_OPF_IMM
#define INV	SROCE_OPF_INV

#define H_NONE	0
#define H_RETH	SROCE_HDR_RETH
#define H_AETH	SROCE_HDR_AETH
#define H_IMM	SROCE_HDR_IMMDT
#define H_IETH	SROCE_HDR_IETH
#define H_DETH	SROCE_HDR_DETH
#define H_X	SROCE_HDR_XRCETH

static const struct sroce_opcode_info sroce_opcode_table[256] = {
	/* SEND and RDMA WRITE, as UC's below but with a reply */
	OP(RC_SEND_FIRST, RC, SEND, ACK, H_NONE, REQ | PL | FIRST),
	OP(RC_SEND_MIDDLE, RC, SEND, ACK, H_NONE, REQ | PL | MIDDLE),
	OP(RC_SEND_LAST, RC, SEND, ACK, H_NONE, REQ | PL | LAST),
	OP(RC_SEND_LAST_IMM, RC, SEND, ACK, H_IMM, REQ | PL | LAST | IMM),
	OP(RC_SEND_ONLY, RC, SEND, ACK, H_NONE, REQ | PL | ONLY),
	OP(RC_SEND_ONLY_IMM, RC, SEND, ACK, H_IMM, REQ | PL | ONLY | IMM),
	OP(RC_WRITE_FIRST, RC, WRITE, ACK, H_RETH, REQ | PL | FIRST),
	OP(RC_WRITE_MIDDLE, RC, WRITE, ACK, H_NONE, REQ | PL | MIDDLE),
	OP(RC_WRITE_LAST, RC, WRITE, ACK, H_NONE, REQ | PL | LAST),
	OP(RC_WRITE_LAST_IMM, RC, WRITE, ACK, H_IMM,
	   REQ | PL | LAST | IMM),
	OP(RC_WRITE_ONLY, RC, WRITE, ACK, H_RETH, REQ | PL | ONLY),
	OP(RC_WRITE_ONLY_IMM, RC, WRITE, ACK, H_RETH | H_IMM,
	   REQ | PL | ONLY | IMM),
	OP(RC_SEND_LAST_INV, RC, SEND, ACK, H_IETH, REQ | PL | LAST | INV),
	OP(RC_SEND_ONLY_INV, RC, SEND, ACK, H_IETH, REQ | PL | ONLY | INV),
	/* A read request is a whole message in one packet, without payload. */
	OP(RC_READ_REQUEST, RC, READ_REQ, READ_RESP, H_RETH, REQ | ONLY),
	/* Middle response packets carry no AETH. */
	OP(RC_READ_RESPONSE_FIRST, RC, READ_RESP, NONE, H_AETH,
	   RSP | PL | FIRST),
	OP(RC_READ_RESPONSE_MIDDLE, RC, READ_RESP, NONE, H_NONE,
	   RSP | PL | MIDDLE),
	OP(RC_READ_RESPONSE_LAST, RC, READ_RESP, NONE, H_AETH,
	   RSP | PL | LAST),
	OP(RC_READ_RESPONSE_ONLY, RC, READ_RESP, NONE, H_AETH,
	   RSP | PL | ONLY),
	OP(RC_ACK, RC, ACK, NONE, H_AETH, RSP | ONLY),
	OP(RC_ATOMIC_ACK, RC, ATOMIC_ACK, NONE,
	   H_AETH | SROCE_HDR_ATOMIC_ACK_ETH, RSP | ONLY),
	OP(RC_CMP_SWAP, RC, CMP_SWAP, ATOMIC_ACK, SROCE_HDR_ATOMIC_ETH,
	   REQ | ONLY),
	OP(RC_FETCH_ADD, RC, FETCH_ADD, ATOMIC_ACK, SROCE_HDR_ATOMIC_ETH,
	   REQ | ONLY),
	/*
	 * IBTA 1.5 memory placement extensions (Annex A19), one packet each,
	 * answered by an RDMA READ response ONLY without payload.  FLUSH
	 * carries no payload; ATOMIC WRITE exactly 8 bytes (sroce_pkt_parse()).
	 */
	OP(RC_FLUSH, RC, FLUSH, READ_RESP, SROCE_HDR_FETH | H_RETH,
	   REQ | ONLY),
	OP(RC_ATOMIC_WRITE, RC, ATOMIC_WRITE, READ_RESP, H_RETH,
	   REQ | PL | ONLY),

	/* UC: RC's SEND and RDMA WRITE rows without invalidate or reply. */
	OP(UC_SEND_FIRST, UC, SEND, NONE, H_NONE, REQ | PL | FIRST),
	OP(UC_SEND_MIDDLE, UC, SEND, NONE, H_NONE, REQ | PL | MIDDLE),
	OP(UC_SEND_LAST, UC, SEND, NONE, H_NONE, REQ | PL | LAST),
	OP(UC_SEND_LAST_IMM, UC, SEND, NONE, H_IMM, REQ | PL | LAST | IMM),
	OP(UC_SEND_ONLY, UC, SEND, NONE, H_NONE, REQ | PL | ONLY),
	OP(UC_SEND_ONLY_IMM, UC, SEND, NONE, H_IMM, REQ | PL | ONLY | IMM),
	OP(UC_WRITE_FIRST, UC, WRITE, NONE, H_RETH, REQ | PL | FIRST),
	OP(UC_WRITE_MIDDLE, UC, WRITE, NONE, H_NONE, REQ | PL | MIDDLE),
	OP(UC_WRITE_LAST, UC, WRITE, NONE, H_NONE, REQ | PL | LAST),
	OP(UC_WRITE_LAST_IMM, UC, WRITE, NONE, H_IMM,
	   REQ | PL | LAST | IMM),
	OP(UC_WRITE_ONLY, UC, WRITE, NONE, H_RETH, REQ | PL | ONLY),
	OP(UC_WRITE_ONLY_IMM, UC, WRITE, NONE, H_RETH | H_IMM,
	   REQ | PL | ONLY | IMM),

	OP(UD_SEND_ONLY, UD, SEND, NONE, H_DETH, REQ | PL | ONLY),
	OP(UD_SEND_ONLY_IMM, UD, SEND, NONE, H_DETH | H_IMM,
	   REQ | PL | ONLY | IMM),

	/*
	 * XRC: RC's rows with transport 101b; every request carries an
	 * XRCETH before its other extension headers, responses none.
	 */
	OP(XRC_SEND_FIRST, XRC, SEND, ACK, H_X, REQ | PL | FIRST),
	OP(XRC_SEND_MIDDLE, XRC, SEND, ACK, H_X, REQ | PL | MIDDLE),
	OP(XRC_SEND_LAST, XRC, SEND, ACK, H_X, REQ | PL | LAST),
	OP(XRC_SEND_LAST_IMM, XRC, SEND, ACK, H_X | H_IMM,
	   REQ | PL | LAST | IMM),
	OP(XRC_SEND_ONLY, XRC, SEND, ACK, H_X, REQ | PL | ONLY),
	OP(XRC_SEND_ONLY_IMM, XRC, SEND, ACK, H_X | H_IMM,
	   REQ | PL | ONLY | IMM),
	OP(XRC_WRITE_FIRST, XRC, WRITE, ACK, H_X | H_RETH, REQ | PL | FIRST),
	OP(XRC_WRITE_MIDDLE, XRC, WRITE, ACK, H_X, REQ | PL | MIDDLE),
	OP(XRC_WRITE_LAST, XRC, WRITE, ACK, H_X, REQ | PL | LAST),
	OP(XRC_WRITE_LAST_IMM, XRC, WRITE, ACK, H_X | H_IMM,
	   REQ | PL | LAST | IMM),
	OP(XRC_WRITE_ONLY, XRC, WRITE, ACK, H_X | H_RETH, REQ | PL | ONLY),
	OP(XRC_WRITE_ONLY_IMM, XRC, WRITE, ACK, H_X | H_RETH | H_IMM,
	   REQ | PL | ONLY | IMM),
	OP(XRC_SEND_LAST_INV, XRC, SEND, ACK, H_X | H_IETH,
	   REQ | PL | LAST | INV),
	OP(XRC_SEND_ONLY_INV, XRC, SEND, ACK, H_X | H_IETH,
	   REQ | PL | ONLY | INV),
	OP(XRC_READ_REQUEST, XRC, READ_REQ, READ_RESP, H_X | H_RETH,
	   REQ | ONLY),
	OP(XRC_READ_RESPONSE_FIRST, XRC, READ_RESP, NONE, H_AETH,
	   RSP | PL | FIRST),
	OP(XRC_READ_RESPONSE_MIDDLE, XRC, READ_RESP, NONE, H_NONE,
	   RSP | PL | MIDDLE),
	OP(XRC_READ_RESPONSE_LAST, XRC, READ_RESP, NONE, H_AETH,
	   RSP | PL | LAST),
	OP(XRC_READ_RESPONSE_ONLY, XRC, READ_RESP, NONE, H_AETH,
	   RSP | PL | ONLY),
	OP(XRC_ACK, XRC, ACK, NONE, H_AETH, RSP | ONLY),
	OP(XRC_ATOMIC_ACK, XRC, ATOMIC_ACK, NONE,
	   H_AETH | SROCE_HDR_ATOMIC_ACK_ETH, RSP | ONLY),
	OP(XRC_CMP_SWAP, XRC, CMP_SWAP, ATOMIC_ACK,
	   H_X | SROCE_HDR_ATOMIC_ETH, REQ | ONLY),
	OP(XRC_FETCH_ADD, XRC, FETCH_ADD, ATOMIC_ACK,
	   H_X | SROCE_HDR_ATOMIC_ETH, REQ | ONLY),

	/*
	 * RoCE v2 congestion notification (IBTA A17.9.3): BTH, 16 reserved
	 * bytes, ICRC.  It is neither request nor response and is not part
	 * of any message, but "only" keeps the pad rules uniform.
	 */
	OP(CNP, CNP, CNP, NONE, SROCE_HDR_CNP, ONLY),
};

const struct sroce_opcode_info *sroce_opcode_lookup(u8 opcode)
{
	const struct sroce_opcode_info *info = &sroce_opcode_table[opcode];

	return info->name ? info : NULL;
}

const char *sroce_opcode_name(u8 opcode)
{
	const struct sroce_opcode_info *info = sroce_opcode_lookup(opcode);

	return info ? info->name : "UNKNOWN";
}
