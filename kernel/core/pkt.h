/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Receive-path validation of a RoCE v2 packet: everything that can be decided
 * from the UDP payload alone (BTH through ICRC), before any QP is looked up.
 *
 * sroce_pkt_parse() never reads outside [buf, buf + len), whatever the bytes;
 * the fuzzer in userspace/fuzz/ holds it to that.  The ICRC is not checked
 * here because it also covers the IP and UDP headers: see icrc.h.
 */
#ifndef SROCE_CORE_PKT_H
#define SROCE_CORE_PKT_H

#include "core_env.h"
#include "hdr.h"
#include "opcode.h"

/*
 * The only partition a RoCE device has: the default P_Key, full member.  A
 * packet matches it if its key is the default partition (low 15 bits all
 * ones) with either membership bit, see sroce_pkt_pkey_match().
 */
#define SROCE_PKEY_DEFAULT	0xffff
#define SROCE_PKEY_FULL_MEMBER	0x8000
#define SROCE_PKEY_BASE_MASK	0x7fff

/* Largest payload of one packet: the largest IB path MTU. */
#define SROCE_MAX_PMTU		4096
#define SROCE_MIN_PMTU		256
/* Largest message, and so largest RETH DMA length (IBTA: 2^31 bytes). */
#define SROCE_MAX_MSG_LEN	0x80000000u

/*
 * Why a packet is dropped, in the order sroce_pkt_parse() checks.  Reasons
 * up to SROCE_DROP_BAD_SYNDROME are malformed packets, dropped silently as
 * IBTA Vol. 1, 9.6 (transport header validation) requires.  The later ones
 * are found on an otherwise well-formed packet, and *pkt is then completely
 * filled in: they are request errors, which an RC responder answers with a
 * NAK "invalid request" once the QP and PSN checks have passed (the PSN is
 * the expected one); any other receiver (UC, UD, a requester receiving a
 * response) simply drops the packet.  See sroce_pkt_drop_is_request_error().
 */
enum sroce_drop {
	SROCE_DROP_NONE = 0,
	SROCE_DROP_TOO_SHORT,		/* less than a BTH and an ICRC */
	SROCE_DROP_LEN_UNALIGNED,	/* not a whole number of 4-byte words */
	SROCE_DROP_BAD_TVER,		/* transport header version not 0 */
	SROCE_DROP_UNKNOWN_OPCODE,	/* RD, reserved, vendor... */
	SROCE_DROP_BAD_PKEY,		/* not the default partition */
	SROCE_DROP_BAD_QPN,		/* QP0, or QP1/multicast not UD */
	SROCE_DROP_TRUNCATED,		/* shorter than the opcode's headers */
	SROCE_DROP_BAD_CNP,		/* CNP of the wrong length or padded */
	SROCE_DROP_UNEXPECTED_PAYLOAD,	/* bytes after a payload-less opcode */
	SROCE_DROP_PAD_EXCEEDS_PAYLOAD,	/* PadCnt larger than the payload */
	SROCE_DROP_BAD_SYNDROME,	/* reserved/misplaced AETH syndrome */
	/* well-formed packets from here on */
	SROCE_DROP_PAD_NOT_LAST,	/* PadCnt on a first/middle packet */
	SROCE_DROP_BAD_PAYLOAD_LEN,	/* first/middle not a PMTU, or > 4096 */
	SROCE_DROP_BAD_DMA_LEN,		/* RETH length impossible */
	SROCE_DROP_MISALIGNED_ATOMIC,	/* atomic VA not 8-byte aligned */
	SROCE_DROP_BAD_FETH,		/* FLUSH placement/selectivity invalid */
	/* found by the data path, not by sroce_pkt_parse() */
	SROCE_DROP_BAD_XRC_SRQ,		/* XRCETH: no SRQ of the domain */
	SROCE_DROP_NR,
};

struct sroce_pkt {
	/* NULL if the packet was dropped before its opcode was known */
	const struct sroce_opcode_info *op;
	struct sroce_bth bth;
	/* extension headers: valid if op->hdrs has their SROCE_HDR_* bit */
	struct sroce_reth reth;
	struct sroce_aeth aeth;
	struct sroce_deth deth;
	u32 xrc_srqn;		/* XRCETH: the target's XRC SRQ */
	struct sroce_feth feth;
	struct sroce_atomic_eth atomic;
	u64 atomic_orig;	/* AtomicAckETH: original remote data */
	u32 imm;		/* ImmDt, host value of the big-endian field */
	u32 ieth_rkey;		/* IETH: R_Key to invalidate */
	/* layout of the buffer, in bytes from the BTH */
	u32 len;		/* whole UDP payload, ICRC included */
	u32 payload_off;	/* = op->hdr_len */
	u32 payload_len;	/* pad and ICRC removed */
	u32 icrc_off;		/* = len - SROCE_ICRC_LEN */
	u32 icrc;		/* as received, see sroce_icrc_load() */
};

enum sroce_drop sroce_pkt_parse(const u8 *buf, u32 len, struct sroce_pkt *pkt);

/*
 * The payload of a connected QP's request against the QP's path MTU pmtu,
 * which sroce_pkt_parse() cannot know: a FIRST or MIDDLE packet carries
 * exactly one path MTU, any other at most one.  pkt is a parsed request;
 * returns SROCE_DROP_NONE or SROCE_DROP_BAD_PAYLOAD_LEN, a request error.
 */
enum sroce_drop sroce_pkt_check_pmtu(const struct sroce_pkt *pkt, u32 pmtu);
bool sroce_pkt_pkey_match(u16 local, u16 remote);
const char *sroce_pkt_drop_name(enum sroce_drop reason);

/* *pkt is complete; an RC responder owes a NAK "invalid request". */
static inline bool sroce_pkt_drop_is_request_error(enum sroce_drop reason)
{
	return reason >= SROCE_DROP_PAD_NOT_LAST && reason < SROCE_DROP_NR;
}

#endif /* SROCE_CORE_PKT_H */
