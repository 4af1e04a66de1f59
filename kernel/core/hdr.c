// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Encoders and decoders of the RoCE v2 transport headers (see hdr.h), and the
 * AETH syndrome tables (IBTA Vol. 1, chapter 9: AETH, credit count and RNR
 * timer encodings).
 */
#include "hdr.h"

void sroce_hdr_bth_decode(struct sroce_bth *bth, const u8 *p)
{
	bth->opcode = p[0];
	bth->se = p[1] & SROCE_BTH_SE;
	bth->mig = p[1] & SROCE_BTH_MIG;
	bth->pad = (p[1] & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT;
	bth->tver = p[1] & SROCE_BTH_TVER_MASK;
	bth->pkey = sroce_wire_get16(p + 2);
	bth->fecn = p[4] & SROCE_BTH_FECN;
	bth->becn = p[4] & SROCE_BTH_BECN;
	bth->resv6 = p[4] & SROCE_BTH_RESV6_MASK;
	bth->dest_qp = sroce_wire_get24(p + 5);
	bth->ack_req = p[8] & SROCE_BTH_ACKREQ;
	bth->resv7 = p[8] & SROCE_BTH_RESV7_MASK;
	bth->psn = sroce_wire_get24(p + 9);
}

void sroce_hdr_bth_encode(u8 *p, const struct sroce_bth *bth)
{
	p[0] = bth->opcode;
	p[1] = (u8)((bth->se ? SROCE_BTH_SE : 0) |
		    (bth->mig ? SROCE_BTH_MIG : 0) |
		    ((bth->pad << SROCE_BTH_PAD_SHIFT) & SROCE_BTH_PAD_MASK) |
		    (bth->tver & SROCE_BTH_TVER_MASK));
	sroce_wire_put16(p + 2, bth->pkey);
	p[4] = (u8)((bth->fecn ? SROCE_BTH_FECN : 0) |
		    (bth->becn ? SROCE_BTH_BECN : 0) |
		    (bth->resv6 & SROCE_BTH_RESV6_MASK));
	sroce_wire_put24(p + 5, bth->dest_qp);
	p[8] = (u8)((bth->ack_req ? SROCE_BTH_ACKREQ : 0) |
		    (bth->resv7 & SROCE_BTH_RESV7_MASK));
	sroce_wire_put24(p + 9, bth->psn);
}

/* RETH: VA (64) | R_Key (32) | DMA Length (32). */
void sroce_hdr_reth_decode(struct sroce_reth *reth, const u8 *p)
{
	reth->va = sroce_wire_get64(p);
	reth->rkey = sroce_wire_get32(p + 8);
	reth->dma_len = sroce_wire_get32(p + 12);
}

void sroce_hdr_reth_encode(u8 *p, const struct sroce_reth *reth)
{
	sroce_wire_put64(p, reth->va);
	sroce_wire_put32(p + 8, reth->rkey);
	sroce_wire_put32(p + 12, reth->dma_len);
}

/* AETH: Syndrome (8) | MSN (24). */
void sroce_hdr_aeth_decode(struct sroce_aeth *aeth, const u8 *p)
{
	aeth->syndrome = p[0];
	aeth->msn = sroce_wire_get24(p + 1);
}

void sroce_hdr_aeth_encode(u8 *p, const struct sroce_aeth *aeth)
{
	p[0] = aeth->syndrome;
	sroce_wire_put24(p + 1, aeth->msn);
}

/* DETH: Q_Key (32) | Reserved (8) | SrcQP (24). */
void sroce_hdr_deth_decode(struct sroce_deth *deth, const u8 *p)
{
	deth->qkey = sroce_wire_get32(p);
	deth->resv8 = p[4];
	deth->src_qp = sroce_wire_get24(p + 5);
}

void sroce_hdr_deth_encode(u8 *p, const struct sroce_deth *deth)
{
	sroce_wire_put32(p, deth->qkey);
	p[4] = deth->resv8;
	sroce_wire_put24(p + 5, deth->src_qp);
}

/* FETH: reserved (26) | selectivity level (2) | placement type (4). */
void sroce_hdr_feth_decode(struct sroce_feth *feth, const u8 *p)
{
	u32 w = sroce_wire_get32(p);

	feth->plt = (u8)(w & SROCE_FETH_PLT_MASK);
	feth->sel = (u8)((w & SROCE_FETH_SEL_MASK) >> SROCE_FETH_SEL_SHIFT);
	feth->resv = w & ~(SROCE_FETH_PLT_MASK | SROCE_FETH_SEL_MASK);
}

void sroce_hdr_feth_encode(u8 *p, const struct sroce_feth *feth)
{
	u32 w = feth->resv & ~(SROCE_FETH_PLT_MASK | SROCE_FETH_SEL_MASK);

	w |= feth->plt & SROCE_FETH_PLT_MASK;
	w |= ((u32)feth->sel << SROCE_FETH_SEL_SHIFT) & SROCE_FETH_SEL_MASK;
	sroce_wire_put32(p, w);
}

/* AtomicETH: VA (64) | R_Key (32) | Swap/Add Data (64) | Compare Data (64). */
void sroce_hdr_atomic_eth_decode(struct sroce_atomic_eth *ae, const u8 *p)
{
	ae->va = sroce_wire_get64(p);
	ae->rkey = sroce_wire_get32(p + 8);
	ae->swap_add = sroce_wire_get64(p + 12);
	ae->compare = sroce_wire_get64(p + 20);
}

void sroce_hdr_atomic_eth_encode(u8 *p, const struct sroce_atomic_eth *ae)
{
	sroce_wire_put64(p, ae->va);
	sroce_wire_put32(p + 8, ae->rkey);
	sroce_wire_put64(p + 12, ae->swap_add);
	sroce_wire_put64(p + 20, ae->compare);
}

/*
 * Bit 7 set, kind 10b and the NAK codes above "invalid RD request" are
 * reserved encodings: a receiver cannot act on them, so they are reported as
 * SROCE_AETH_RESERVED rather than as the kind their bits 6:5 suggest.
 */
enum sroce_aeth_kind sroce_hdr_syndrome_kind(u8 syndrome)
{
	enum sroce_aeth_kind kind;

	if (syndrome & 0x80)
		return SROCE_AETH_RESERVED;
	kind = (enum sroce_aeth_kind)(syndrome >> SROCE_AETH_KIND_SHIFT);
	if (kind == SROCE_AETH_NAK &&
	    sroce_hdr_syndrome_value(syndrome) > SROCE_NAK_INVALID_RD_REQ)
		return SROCE_AETH_RESERVED;
	return kind;
}

u8 sroce_hdr_syndrome(enum sroce_aeth_kind kind, u8 value)
{
	return (u8)(((kind & 3) << SROCE_AETH_KIND_SHIFT) |
		    (value & SROCE_AETH_VALUE_MASK));
}

/*
 * End-to-end credits advertised by an ACK (IBTA credit count encoding): codes
 * 0..30 stand for a roughly logarithmic scale of receive WQE counts; 31 means
 * the responder does not take part in credit flow control.
 */
static const u16 sroce_aeth_credit_table[SROCE_AETH_CREDIT_INVALID] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
	12288, 16384, 24576, 32768,
};

u32 sroce_hdr_aeth_credits(u8 code)
{
	code &= SROCE_AETH_VALUE_MASK;
	if (code == SROCE_AETH_CREDIT_INVALID)
		return SROCE_AETH_CREDITS_UNLIMITED;
	return sroce_aeth_credit_table[code];
}

/*
 * The code to advertise for a number of free receive WQEs: the largest one
 * that does not promise more than there are, so the requester never sends a
 * message the responder has no WQE for.
 */
u8 sroce_hdr_aeth_credit_code(u32 credits)
{
	u8 code = SROCE_AETH_CREDIT_INVALID - 1;

	while (code > 0 && sroce_aeth_credit_table[code] > credits)
		code--;
	return code;
}

/*
 * RNR NAK timer codes (IBTA RNR timer encoding) in microseconds.  Code 0 is
 * the longest delay, not the shortest.  (rdma_rxe's table has 61410 for code
 * 25; the spec's value is 61.44 ms.)
 */
static const u32 sroce_rnr_timer_table_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

u32 sroce_hdr_rnr_timer_us(u8 code)
{
	return sroce_rnr_timer_table_us[code & SROCE_AETH_VALUE_MASK];
}
