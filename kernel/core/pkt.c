// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Receive-path validation (see pkt.h).
 *
 * Every read is preceded by a length check of what it reads: the BTH and the
 * ICRC once len >= 16, the extension headers once len covers op->hdr_len plus
 * the ICRC.  All lengths are u32 and every subtraction is guarded by the
 * comparison before it, so nothing can wrap.
 *
 * Reserved fields that IBTA defines as "transmitted as 0, ignored on
 * receive" (BTH Resv7, the DETH reserved byte, the variant BTH Resv6a) are
 * reported but never cause a drop: a later revision of the spec may use them.
 * Reserved *encodings* - an AETH syndrome with bit 7 set, kind 10b or a NAK
 * code above 4 - cannot be acted upon and are dropped.
 */
#include "pkt.h"
#include "icrc.h"

static const char *const sroce_drop_names[SROCE_DROP_NR] = {
	[SROCE_DROP_NONE] = "none",
	[SROCE_DROP_TOO_SHORT] = "too_short",
	[SROCE_DROP_LEN_UNALIGNED] = "len_unaligned",
	[SROCE_DROP_BAD_TVER] = "bad_tver",
	[SROCE_DROP_UNKNOWN_OPCODE] = "unknown_opcode",
	[SROCE_DROP_BAD_PKEY] = "bad_pkey",
	[SROCE_DROP_BAD_QPN] = "bad_qpn",
	[SROCE_DROP_TRUNCATED] = "truncated",
	[SROCE_DROP_BAD_CNP] = "bad_cnp",
	[SROCE_DROP_UNEXPECTED_PAYLOAD] = "unexpected_payload",
	[SROCE_DROP_PAD_EXCEEDS_PAYLOAD] = "pad_exceeds_payload",
	[SROCE_DROP_BAD_SYNDROME] = "bad_syndrome",
	[SROCE_DROP_PAD_NOT_LAST] = "pad_not_last",
	[SROCE_DROP_BAD_PAYLOAD_LEN] = "bad_payload_len",
	[SROCE_DROP_BAD_DMA_LEN] = "bad_dma_len",
	[SROCE_DROP_MISALIGNED_ATOMIC] = "misaligned_atomic",
	[SROCE_DROP_BAD_FETH] = "bad_feth",
	[SROCE_DROP_BAD_XRC_SRQ] = "bad_xrc_srq",
};

const char *sroce_pkt_drop_name(enum sroce_drop reason)
{
	if ((unsigned int)reason >= SROCE_DROP_NR)
		return "invalid";
	return sroce_drop_names[reason];
}

/*
 * IBTA P_Key matching (Vol. 1, 10.9): the low 15 bits name the partition,
 * bit 15 says full (1) or limited (0) member.  Two keys match if they name
 * the same partition and at least one of the two ends is a full member;
 * partition 0 (0x0000 and 0x8000) is the invalid key and matches nothing.
 * sroce's table holds only 0xFFFF, so in practice 0xFFFF and 0x7FFF are
 * accepted.
 */
bool sroce_pkt_pkey_match(u16 local, u16 remote)
{
	if (!(remote & SROCE_PKEY_BASE_MASK))
		return false;
	if ((local ^ remote) & SROCE_PKEY_BASE_MASK)
		return false;
	return (local | remote) & SROCE_PKEY_FULL_MEMBER;
}

/*
 * RoCE has no subnet manager and so no QP0: nothing may be addressed to it.
 * QP1 (GSI) and the multicast QPN only exist for UD.  A CNP names the QP whose
 * flow is throttled, whatever its transport, but never a multicast group.
 */
static bool sroce_pkt_qpn_ok(const struct sroce_opcode_info *op, u32 qpn)
{
	if (qpn == 0)
		return false;
	if (op->kind == SROCE_KIND_CNP)
		return qpn != SROCE_QPN_MULTICAST;
	if (qpn == 1 || qpn == SROCE_QPN_MULTICAST)
		return op->transport == SROCE_TRANSPORT_UD;
	return true;
}

/* A payload that fills a first or middle packet: one of the IB MTUs. */
static bool sroce_pkt_is_pmtu(u32 n)
{
	return n >= SROCE_MIN_PMTU && n <= SROCE_MAX_PMTU && !(n & (n - 1));
}

static void sroce_pkt_decode_ext(const u8 *buf, struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *op = pkt->op;
	const u8 *off = op->off;

	if (op->hdrs & SROCE_HDR_DETH)
		sroce_hdr_deth_decode(&pkt->deth, buf + off[SROCE_EXT_DETH]);
	if (op->hdrs & SROCE_HDR_XRCETH)
		pkt->xrc_srqn = sroce_hdr_xrceth_decode(buf +
						       off[SROCE_EXT_XRCETH]);
	if (op->hdrs & SROCE_HDR_FETH)
		sroce_hdr_feth_decode(&pkt->feth, buf + off[SROCE_EXT_FETH]);
	if (op->hdrs & SROCE_HDR_RETH)
		sroce_hdr_reth_decode(&pkt->reth, buf + off[SROCE_EXT_RETH]);
	if (op->hdrs & SROCE_HDR_ATOMIC_ETH)
		sroce_hdr_atomic_eth_decode(&pkt->atomic,
					    buf + off[SROCE_EXT_ATOMIC_ETH]);
	if (op->hdrs & SROCE_HDR_AETH)
		sroce_hdr_aeth_decode(&pkt->aeth, buf + off[SROCE_EXT_AETH]);
	if (op->hdrs & SROCE_HDR_ATOMIC_ACK_ETH)
		pkt->atomic_orig = sroce_hdr_atomic_ack_eth_decode(buf +
				off[SROCE_EXT_ATOMIC_ACK_ETH]);
	if (op->hdrs & SROCE_HDR_IMMDT)
		pkt->imm = sroce_hdr_immdt_decode(buf + off[SROCE_EXT_IMMDT]);
	if (op->hdrs & SROCE_HDR_IETH)
		pkt->ieth_rkey = sroce_hdr_ieth_decode(buf +
						       off[SROCE_EXT_IETH]);
}

/*
 * Read responses and atomic ACKs always carry an ACK syndrome: a responder
 * reports errors with an ACK packet, never with a response carrying data.
 */
static bool sroce_pkt_syndrome_ok(const struct sroce_pkt *pkt)
{
	enum sroce_aeth_kind kind = sroce_hdr_syndrome_kind(pkt->aeth.syndrome);

	if (kind == SROCE_AETH_RESERVED)
		return false;
	return pkt->op->kind == SROCE_KIND_ACK || kind == SROCE_AETH_ACK;
}

/*
 * ATOMIC WRITE (IBTA A19.5): one 8-byte word, its RETH naming exactly it,
 * at an 8-byte aligned address.
 */
static enum sroce_drop
sroce_pkt_check_atomic_write(const struct sroce_pkt *pkt)
{
	if (pkt->reth.dma_len != SROCE_ATOMIC_WRITE_LEN ||
	    pkt->payload_len != SROCE_ATOMIC_WRITE_LEN)
		return SROCE_DROP_BAD_DMA_LEN;
	if (pkt->reth.va & (SROCE_ATOMIC_WRITE_LEN - 1))
		return SROCE_DROP_MISALIGNED_ATOMIC;
	return SROCE_DROP_NONE;
}

/*
 * FLUSH (IBTA A19.4): a placement type of at least one known bit and
 * nothing else, a defined selectivity level (range or region).  The RETH's
 * length may be 0 (nothing to flush in a range) and is ignored for a
 * whole-region flush.
 */
static enum sroce_drop sroce_pkt_check_flush(const struct sroce_pkt *pkt)
{
	const u8 known = SROCE_FLUSH_GLOBAL | SROCE_FLUSH_PERSISTENT;

	if (!pkt->feth.plt || (pkt->feth.plt & ~known))
		return SROCE_DROP_BAD_FETH;
	if (pkt->feth.sel != SROCE_FLUSH_RANGE && pkt->feth.sel != SROCE_FLUSH_MR)
		return SROCE_DROP_BAD_FETH;
	return SROCE_DROP_NONE;
}

/*
 * Request errors of a well-formed packet.  A first or middle packet carries
 * exactly one path MTU of payload, so without knowing the QP's MTU it must
 * still be one of the five IB MTUs and unpadded; no packet carries more than
 * the largest.  An RDMA WRITE only packet carries its whole DMA length; a
 * first packet less than it.
 */
static enum sroce_drop sroce_pkt_check_request(const struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *op = pkt->op;

	if (pkt->bth.pad && !(op->flags & SROCE_OPF_LAST))
		return SROCE_DROP_PAD_NOT_LAST;
	if (op->flags & SROCE_OPF_PAYLOAD) {
		if (pkt->payload_len > SROCE_MAX_PMTU)
			return SROCE_DROP_BAD_PAYLOAD_LEN;
		if (!(op->flags & SROCE_OPF_LAST) &&
		    !sroce_pkt_is_pmtu(pkt->payload_len))
			return SROCE_DROP_BAD_PAYLOAD_LEN;
	}
	if (op->hdrs & SROCE_HDR_RETH) {
		u32 dma_len = pkt->reth.dma_len;

		if (dma_len > SROCE_MAX_MSG_LEN)
			return SROCE_DROP_BAD_DMA_LEN;
		if (op->kind == SROCE_KIND_WRITE) {
			if (op->flags & SROCE_OPF_LAST) {
				if (dma_len != pkt->payload_len)
					return SROCE_DROP_BAD_DMA_LEN;
			} else if (dma_len <= pkt->payload_len) {
				return SROCE_DROP_BAD_DMA_LEN;
			}
		}
	}
	if ((op->hdrs & SROCE_HDR_ATOMIC_ETH) && (pkt->atomic.va & 7))
		return SROCE_DROP_MISALIGNED_ATOMIC;
	if (op->kind == SROCE_KIND_ATOMIC_WRITE)
		return sroce_pkt_check_atomic_write(pkt);
	if (op->kind == SROCE_KIND_FLUSH)
		return sroce_pkt_check_flush(pkt);
	return SROCE_DROP_NONE;
}

enum sroce_drop sroce_pkt_check_pmtu(const struct sroce_pkt *pkt, u32 pmtu)
{
	const struct sroce_opcode_info *op = pkt->op;

	if (!(op->flags & SROCE_OPF_PAYLOAD))
		return SROCE_DROP_NONE;
	if (pkt->payload_len > pmtu)
		return SROCE_DROP_BAD_PAYLOAD_LEN;
	if (!(op->flags & SROCE_OPF_LAST) && pkt->payload_len != pmtu)
		return SROCE_DROP_BAD_PAYLOAD_LEN;
	return SROCE_DROP_NONE;
}

enum sroce_drop sroce_pkt_parse(const u8 *buf, u32 len, struct sroce_pkt *pkt)
{
	const struct sroce_opcode_info *op;
	u32 room;

	pkt->op = NULL;
	pkt->len = len;
	if (len < SROCE_BTH_LEN + SROCE_ICRC_LEN)
		return SROCE_DROP_TOO_SHORT;
	/* IB packets are whole 4-byte words (PadCnt exists for that). */
	if (len & 3)
		return SROCE_DROP_LEN_UNALIGNED;

	sroce_hdr_bth_decode(&pkt->bth, buf);
	pkt->icrc_off = len - SROCE_ICRC_LEN;
	pkt->icrc = sroce_icrc_load(buf + pkt->icrc_off);
	/* Another version could lay out even the opcodes differently. */
	if (pkt->bth.tver != SROCE_BTH_TVER)
		return SROCE_DROP_BAD_TVER;
	op = sroce_opcode_lookup(pkt->bth.opcode);
	if (!op)
		return SROCE_DROP_UNKNOWN_OPCODE;
	pkt->op = op;
	if (!sroce_pkt_pkey_match(SROCE_PKEY_DEFAULT, pkt->bth.pkey))
		return SROCE_DROP_BAD_PKEY;
	if (!sroce_pkt_qpn_ok(op, pkt->bth.dest_qp))
		return SROCE_DROP_BAD_QPN;

	if (pkt->icrc_off < op->hdr_len)
		return SROCE_DROP_TRUNCATED;
	/* payload and pad */
	room = pkt->icrc_off - op->hdr_len;
	if (op->kind == SROCE_KIND_CNP) {
		if (room || pkt->bth.pad)
			return SROCE_DROP_BAD_CNP;
	} else if (room && !(op->flags & SROCE_OPF_PAYLOAD)) {
		return SROCE_DROP_UNEXPECTED_PAYLOAD;
	}
	if (pkt->bth.pad > room)
		return SROCE_DROP_PAD_EXCEEDS_PAYLOAD;
	pkt->payload_off = op->hdr_len;
	pkt->payload_len = room - pkt->bth.pad;

	sroce_pkt_decode_ext(buf, pkt);
	if ((op->hdrs & SROCE_HDR_AETH) && !sroce_pkt_syndrome_ok(pkt))
		return SROCE_DROP_BAD_SYNDROME;

	return sroce_pkt_check_request(pkt);
}
