/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The BTH opcodes sroce speaks (IBTA Vol. 1, 9.2 and 9.3; CNP: A17.9.3)
 * and, for each, everything the receive and send paths need to know without
 * looking at QP state: which extension headers follow the BTH and where,
 * whether a payload follows them, where the packet sits in its message, and
 * which reply the responder owes.
 *
 * An opcode is 3 bits of transport (7:5) and 5 bits of operation (4:0).  RC,
 * UC, UD and XRC opcodes, the RC memory placement extensions of IBTA 1.5
 * (FLUSH and ATOMIC WRITE, Annex A19) and the RoCE v2 CNP are known; RD
 * opcodes, XRC's FLUSH and ATOMIC WRITE, the manufacturer-specific range
 * and every reserved value are unknown: sroce_opcode_lookup() returns NULL
 * for them and the receive path drops them.
 */
#ifndef SROCE_CORE_OPCODE_H
#define SROCE_CORE_OPCODE_H

#include "core_env.h"

/* Transport, bits 7:5 of the opcode. */
enum sroce_transport {
	SROCE_TRANSPORT_RC = 0,
	SROCE_TRANSPORT_UC = 1,
	SROCE_TRANSPORT_RD = 2,
	SROCE_TRANSPORT_UD = 3,
	SROCE_TRANSPORT_CNP = 4,
	SROCE_TRANSPORT_XRC = 5,
	/* 6 and 7: manufacturer specific */
};

#define SROCE_OPCODE_TRANSPORT_SHIFT	5

enum sroce_opcode {
	SROCE_OP_RC_SEND_FIRST = 0x00,
	SROCE_OP_RC_SEND_MIDDLE = 0x01,
	SROCE_OP_RC_SEND_LAST = 0x02,
	SROCE_OP_RC_SEND_LAST_IMM = 0x03,
	SROCE_OP_RC_SEND_ONLY = 0x04,
	SROCE_OP_RC_SEND_ONLY_IMM = 0x05,
	SROCE_OP_RC_WRITE_FIRST = 0x06,
	SROCE_OP_RC_WRITE_MIDDLE = 0x07,
	SROCE_OP_RC_WRITE_LAST = 0x08,
	SROCE_OP_RC_WRITE_LAST_IMM = 0x09,
	SROCE_OP_RC_WRITE_ONLY = 0x0a,
	SROCE_OP_RC_WRITE_ONLY_IMM = 0x0b,
	SROCE_OP_RC_READ_REQUEST = 0x0c,
	SROCE_OP_RC_READ_RESPONSE_FIRST = 0x0d,
	SROCE_OP_RC_READ_RESPONSE_MIDDLE = 0x0e,
	SROCE_OP_RC_READ_RESPONSE_LAST = 0x0f,
	SROCE_OP_RC_READ_RESPONSE_ONLY = 0x10,
	SROCE_OP_RC_ACK = 0x11,
	SROCE_OP_RC_ATOMIC_ACK = 0x12,
	SROCE_OP_RC_CMP_SWAP = 0x13,
	SROCE_OP_RC_FETCH_ADD = 0x14,
	SROCE_OP_RC_SEND_LAST_INV = 0x16,
	SROCE_OP_RC_SEND_ONLY_INV = 0x17,
	SROCE_OP_RC_FLUSH = 0x1c,
	SROCE_OP_RC_ATOMIC_WRITE = 0x1d,

	SROCE_OP_UC_SEND_FIRST = 0x20,
	SROCE_OP_UC_SEND_MIDDLE = 0x21,
	SROCE_OP_UC_SEND_LAST = 0x22,
	SROCE_OP_UC_SEND_LAST_IMM = 0x23,
	SROCE_OP_UC_SEND_ONLY = 0x24,
	SROCE_OP_UC_SEND_ONLY_IMM = 0x25,
	SROCE_OP_UC_WRITE_FIRST = 0x26,
	SROCE_OP_UC_WRITE_MIDDLE = 0x27,
	SROCE_OP_UC_WRITE_LAST = 0x28,
	SROCE_OP_UC_WRITE_LAST_IMM = 0x29,
	SROCE_OP_UC_WRITE_ONLY = 0x2a,
	SROCE_OP_UC_WRITE_ONLY_IMM = 0x2b,

	SROCE_OP_UD_SEND_ONLY = 0x64,
	SROCE_OP_UD_SEND_ONLY_IMM = 0x65,

	SROCE_OP_CNP = 0x81,

	/* XRC (Annex A14): RC's opcodes with transport 101b */
	SROCE_OP_XRC_SEND_FIRST = 0xa0,
	SROCE_OP_XRC_SEND_MIDDLE = 0xa1,
	SROCE_OP_XRC_SEND_LAST = 0xa2,
	SROCE_OP_XRC_SEND_LAST_IMM = 0xa3,
	SROCE_OP_XRC_SEND_ONLY = 0xa4,
	SROCE_OP_XRC_SEND_ONLY_IMM = 0xa5,
	SROCE_OP_XRC_WRITE_FIRST = 0xa6,
	SROCE_OP_XRC_WRITE_MIDDLE = 0xa7,
	SROCE_OP_XRC_WRITE_LAST = 0xa8,
	SROCE_OP_XRC_WRITE_LAST_IMM = 0xa9,
	SROCE_OP_XRC_WRITE_ONLY = 0xaa,
	SROCE_OP_XRC_WRITE_ONLY_IMM = 0xab,
	SROCE_OP_XRC_READ_REQUEST = 0xac,
	SROCE_OP_XRC_READ_RESPONSE_FIRST = 0xad,
	SROCE_OP_XRC_READ_RESPONSE_MIDDLE = 0xae,
	SROCE_OP_XRC_READ_RESPONSE_LAST = 0xaf,
	SROCE_OP_XRC_READ_RESPONSE_ONLY = 0xb0,
	SROCE_OP_XRC_ACK = 0xb1,
	SROCE_OP_XRC_ATOMIC_ACK = 0xb2,
	SROCE_OP_XRC_CMP_SWAP = 0xb3,
	SROCE_OP_XRC_FETCH_ADD = 0xb4,
	SROCE_OP_XRC_SEND_LAST_INV = 0xb6,
	SROCE_OP_XRC_SEND_ONLY_INV = 0xb7,
};

/* What a packet of the opcode is. */
enum sroce_op_kind {
	SROCE_KIND_SEND,
	SROCE_KIND_WRITE,
	SROCE_KIND_READ_REQ,
	SROCE_KIND_READ_RESP,
	SROCE_KIND_ACK,
	SROCE_KIND_ATOMIC_ACK,
	SROCE_KIND_CMP_SWAP,
	SROCE_KIND_FETCH_ADD,
	SROCE_KIND_CNP,
	SROCE_KIND_FLUSH,
	SROCE_KIND_ATOMIC_WRITE,
};

/*
 * The reply an RC responder owes for a request packet: an ACK (which may be
 * coalesced with later ones), read response packets, or an atomic ACK.  UC,
 * UD, responses and CNPs are never answered.  FLUSH and ATOMIC WRITE are
 * answered like an RDMA READ, with one RDMA READ response ONLY packet
 * without payload (IBTA A19; rdma_rxe does the same).
 */
enum sroce_op_reply {
	SROCE_REPLY_NONE,
	SROCE_REPLY_ACK,
	SROCE_REPLY_READ_RESP,
	SROCE_REPLY_ATOMIC_ACK,
};

/*
 * Extension headers, in the order they follow the BTH on the wire (IBTA
 * 9.2: DETH, then RETH or AtomicETH, then ImmDt or IETH; responses AETH
 * then AtomicAckETH; XRC requests: XRCETH first, Annex A14; FLUSH: FETH,
 * then RETH).  No known opcode carries two
 * headers out of this order, so the offsets of the table follow from the
 * set of headers alone.
 */
enum sroce_ext {
	SROCE_EXT_DETH,
	SROCE_EXT_XRCETH,
	SROCE_EXT_FETH,
	SROCE_EXT_RETH,
	SROCE_EXT_ATOMIC_ETH,
	SROCE_EXT_AETH,
	SROCE_EXT_ATOMIC_ACK_ETH,
	SROCE_EXT_IMMDT,
	SROCE_EXT_IETH,
	SROCE_EXT_CNP,		/* the 16 reserved bytes of a CNP */
	SROCE_EXT_NR,
};

#define SROCE_HDR(ext)		(1u << (ext))
#define SROCE_HDR_DETH		SROCE_HDR(SROCE_EXT_DETH)
#define SROCE_HDR_XRCETH	SROCE_HDR(SROCE_EXT_XRCETH)
#define SROCE_HDR_FETH		SROCE_HDR(SROCE_EXT_FETH)
#define SROCE_HDR_RETH		SROCE_HDR(SROCE_EXT_RETH)
#define SROCE_HDR_ATOMIC_ETH	SROCE_HDR(SROCE_EXT_ATOMIC_ETH)
#define SROCE_HDR_AETH		SROCE_HDR(SROCE_EXT_AETH)
#define SROCE_HDR_ATOMIC_ACK_ETH SROCE_HDR(SROCE_EXT_ATOMIC_ACK_ETH)
#define SROCE_HDR_IMMDT		SROCE_HDR(SROCE_EXT_IMMDT)
#define SROCE_HDR_IETH		SROCE_HDR(SROCE_EXT_IETH)
#define SROCE_HDR_CNP		SROCE_HDR(SROCE_EXT_CNP)

/* Opcode flags. */
#define SROCE_OPF_PAYLOAD	(1u << 0) /* a payload (maybe empty) follows */
#define SROCE_OPF_FIRST		(1u << 1) /* starts a message */
#define SROCE_OPF_MIDDLE	(1u << 2)
#define SROCE_OPF_LAST		(1u << 3) /* ends a message */
#define SROCE_OPF_ONLY		(SROCE_OPF_FIRST | SROCE_OPF_LAST)
#define SROCE_OPF_REQUEST	(1u << 4) /* requester to responder */
#define SROCE_OPF_RESPONSE	(1u << 5) /* responder to requester */
#define SROCE_OPF_IMM		(1u << 6) /* carries immediate data */
#define SROCE_OPF_INV		(1u << 7) /* invalidates an R_Key */

struct sroce_opcode_info {
	const char *name;
	u8 opcode;
	u8 transport;		/* enum sroce_transport */
	u8 kind;		/* enum sroce_op_kind */
	u8 reply;		/* enum sroce_op_reply */
	u16 hdrs;		/* SROCE_HDR_* */
	u16 flags;		/* SROCE_OPF_* */
	/* BTH + extension headers: where the payload (or the ICRC) starts */
	u8 hdr_len;
	/* offset of each present extension header from the BTH; 0 if absent */
	u8 off[SROCE_EXT_NR];
};

const struct sroce_opcode_info *sroce_opcode_lookup(u8 opcode);
const char *sroce_opcode_name(u8 opcode);

static inline enum sroce_transport sroce_opcode_transport(u8 opcode)
{
	return (enum sroce_transport)(opcode >> SROCE_OPCODE_TRANSPORT_SHIFT);
}

/* RC and XRC: acknowledged, retried, answered (IBTA 9.7; XRC: A14). */
static inline bool sroce_transport_is_reliable(enum sroce_transport tr)
{
	return tr == SROCE_TRANSPORT_RC || tr == SROCE_TRANSPORT_XRC;
}

static inline bool sroce_opcode_has(const struct sroce_opcode_info *info,
				    enum sroce_ext ext)
{
	return info->hdrs & SROCE_HDR(ext);
}

static inline bool
sroce_opcode_needs_reply(const struct sroce_opcode_info *info)
{
	return info->reply != SROCE_REPLY_NONE;
}

#endif /* SROCE_CORE_OPCODE_H */
