/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * RoCE v2 transport headers: the IBTA Base Transport Header (BTH) and the
 * extended transport headers (IBTA Vol. 1, 9.2 and 9.3), their wire layout,
 * and encoders/decoders between bytes and host structs.
 *
 * Everything on the wire is big-endian and may sit at any alignment (see
 * wire.h).  A decoder reads exactly SROCE_<HDR>_LEN bytes from p and an
 * encoder writes exactly that many; the caller guarantees they exist
 * (sroce_pkt_parse() does for received packets).  Encoders truncate every
 * value to the width of its field, so an out-of-range value never spills into
 * a neighbouring field.
 *
 * The inline sroce_bth_*() accessors read or patch one BTH field in place,
 * for data-path code that needs a single field (PSN, QPN) and does not want
 * to decode the whole header.
 */
#ifndef SROCE_CORE_HDR_H
#define SROCE_CORE_HDR_H

#include "core_env.h"
#include "wire.h"

/* Header lengths in bytes (IBTA Vol. 1, 9.2-9.3; A17 for the CNP). */
#define SROCE_BTH_LEN		12
#define SROCE_RETH_LEN		16
#define SROCE_AETH_LEN		4
#define SROCE_DETH_LEN		8
#define SROCE_FETH_LEN		4
#define SROCE_XRCETH_LEN	4
#define SROCE_IMMDT_LEN		4
#define SROCE_IETH_LEN		4
#define SROCE_ATOMIC_ETH_LEN	28
#define SROCE_ATOMIC_ACK_ETH_LEN 8
/* A RoCE v2 CNP carries 16 reserved bytes after its BTH (IBTA A17.9.3). */
#define SROCE_CNP_RSVD_LEN	16
#define SROCE_ICRC_LEN		4
/* The payload of an ATOMIC WRITE: one aligned 64-bit word (IBTA A19.5). */
#define SROCE_ATOMIC_WRITE_LEN	8

/* UDP destination port of RoCE v2 (IANA; IBTA Annex A17). */
#define SROCE_ROCE_V2_UDP_PORT	4791

/* 24-bit fields. */
#define SROCE_QPN_MASK		0x00ffffffu
#define SROCE_MSN_MASK		0x00ffffffu
/* Destination QP of multicast packets (UD only). */
#define SROCE_QPN_MULTICAST	0x00ffffffu
/* The only transport header version IBTA has defined. */
#define SROCE_BTH_TVER		0

/*
 * BTH, byte by byte:
 *   0     OpCode
 *   1     SE (7) | M (6) | PadCnt (5:4) | TVer (3:0)
 *   2-3   P_Key
 *   4     FECN (7) | BECN (6) | Resv6a (5:0)   - variant: not in the ICRC
 *   5-7   DestQP
 *   8     AckReq (7) | Resv7 (6:0)
 *   9-11  PSN
 */
#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_TVER_MASK	0x0f
#define SROCE_BTH_FECN		0x80
#define SROCE_BTH_BECN		0x40
#define SROCE_BTH_RESV6_MASK	0x3f
#define SROCE_BTH_ACKREQ	0x80
#define SROCE_BTH_RESV7_MASK	0x7f
/* Byte offset of the FECN/BECN/Resv6a byte, masked by the ICRC. */
#define SROCE_BTH_VARIANT_OFF	4

struct sroce_bth {
	u8 opcode;
	bool se;		/* solicited event */
	bool mig;		/* MigReq */
	u8 pad;			/* PadCnt, 0..3 */
	u8 tver;		/* 0..15 */
	u16 pkey;
	bool fecn;
	bool becn;
	u8 resv6;		/* 6 bits, variant */
	u32 dest_qp;		/* 24 bits */
	bool ack_req;
	u8 resv7;		/* 7 bits */
	u32 psn;		/* 24 bits */
};

/* RDMA Extended Transport Header: RDMA WRITE first/only, READ request. */
struct sroce_reth {
	u64 va;
	u32 rkey;
	u32 dma_len;
};

/* ACK Extended Transport Header: syndrome (8 bits) and MSN (24 bits). */
struct sroce_aeth {
	u8 syndrome;
	u32 msn;
};

/* Datagram Extended Transport Header: UD. */
struct sroce_deth {
	u32 qkey;
	u8 resv8;
	u32 src_qp;		/* 24 bits */
};

/*
 * XRC Extended Transport Header (IBTA Vol. 1, Annex A14; in every XRC
 * request, none in responses): eight reserved bits, then the number of
 * the XRC SRQ at the target that the message is for.  The target QP's
 * number is in the BTH.
 */
static inline u32 sroce_hdr_xrceth_decode(const u8 *p)
{
	return sroce_wire_get24(p + 1);
}

static inline void sroce_hdr_xrceth_encode(u8 *p, u32 srqn)
{
	p[0] = 0;
	sroce_wire_put24(p + 1, srqn);
}

/*
 * FLUSH Extended Transport Header (IBTA A19.4.1): one big-endian word whose
 * bits 3:0 are the placement type (a set of SROCE_FLUSH_GLOBAL and
 * SROCE_FLUSH_PERSISTENT, the values of ib_core's enum ib_placement_type)
 * and bits 5:4 the selectivity level (SROCE_FLUSH_RANGE: the RETH's range;
 * SROCE_FLUSH_MR: the whole region the R_Key names).  The other bits are
 * reserved.
 */
#define SROCE_FETH_PLT_MASK	0x0000000fu
#define SROCE_FETH_SEL_MASK	0x00000030u
#define SROCE_FETH_SEL_SHIFT	4

#define SROCE_FLUSH_GLOBAL	0x1
#define SROCE_FLUSH_PERSISTENT	0x2
#define SROCE_FLUSH_RANGE	0
#define SROCE_FLUSH_MR		1

struct sroce_feth {
	u8 plt;			/* placement type, 4 bits */
	u8 sel;			/* selectivity level, 2 bits */
	u32 resv;		/* the reserved bits, in place */
};

/* Atomic Extended Transport Header: CMP_SWAP and FETCH_ADD. */
struct sroce_atomic_eth {
	u64 va;
	u32 rkey;
	u64 swap_add;		/* swap value, or the addend of FETCH_ADD */
	u64 compare;		/* ignored by FETCH_ADD */
};

/*
 * AETH syndrome (IBTA Vol. 1, 9.3.5): bit 7 is reserved (0); bits 6:5 say
 * what the packet is and bits 4:0 qualify it.
 */
#define SROCE_AETH_KIND_SHIFT	5
#define SROCE_AETH_VALUE_MASK	0x1f

enum sroce_aeth_kind {
	SROCE_AETH_ACK = 0,	/* value: credit count code */
	SROCE_AETH_RNR_NAK = 1,	/* value: RNR timer code */
	SROCE_AETH_RESERVED = 2, /* bits 6:5 == 10b, or any encoding below */
	SROCE_AETH_NAK = 3,	/* value: enum sroce_nak_code */
};

enum sroce_nak_code {
	SROCE_NAK_PSN_SEQ_ERR = 0,
	SROCE_NAK_INVALID_REQ = 1,
	SROCE_NAK_REM_ACCESS_ERR = 2,
	SROCE_NAK_REM_OP_ERR = 3,
	SROCE_NAK_INVALID_RD_REQ = 4,
	/* 5..31 reserved */
};

/* Credit count code 31: "invalid", the responder does not limit credits. */
#define SROCE_AETH_CREDIT_INVALID	31
#define SROCE_AETH_CREDITS_UNLIMITED	0xffffffffu

void sroce_hdr_bth_decode(struct sroce_bth *bth, const u8 *p);
void sroce_hdr_bth_encode(u8 *p, const struct sroce_bth *bth);
void sroce_hdr_reth_decode(struct sroce_reth *reth, const u8 *p);
void sroce_hdr_reth_encode(u8 *p, const struct sroce_reth *reth);
void sroce_hdr_aeth_decode(struct sroce_aeth *aeth, const u8 *p);
void sroce_hdr_aeth_encode(u8 *p, const struct sroce_aeth *aeth);
void sroce_hdr_deth_decode(struct sroce_deth *deth, const u8 *p);
void sroce_hdr_deth_encode(u8 *p, const struct sroce_deth *deth);
void sroce_hdr_feth_decode(struct sroce_feth *feth, const u8 *p);
void sroce_hdr_feth_encode(u8 *p, const struct sroce_feth *feth);
void sroce_hdr_atomic_eth_decode(struct sroce_atomic_eth *ae, const u8 *p);
void sroce_hdr_atomic_eth_encode(u8 *p, const struct sroce_atomic_eth *ae);

/*
 * ImmDt and IETH are a single 32-bit field each, AtomicAckETH a single 64-bit
 * one.  ImmDt is returned as the host value of the big-endian field: the
 * verbs ABI hands immediate data to applications in network order, so the
 * data path converts it back (cpu_to_be32()) when it fills a work completion.
 */
static inline u32 sroce_hdr_immdt_decode(const u8 *p)
{
	return sroce_wire_get32(p);
}

static inline void sroce_hdr_immdt_encode(u8 *p, u32 imm)
{
	sroce_wire_put32(p, imm);
}

static inline u32 sroce_hdr_ieth_decode(const u8 *p)
{
	return sroce_wire_get32(p);
}

static inline void sroce_hdr_ieth_encode(u8 *p, u32 rkey)
{
	sroce_wire_put32(p, rkey);
}

static inline u64 sroce_hdr_atomic_ack_eth_decode(const u8 *p)
{
	return sroce_wire_get64(p);
}

static inline void sroce_hdr_atomic_ack_eth_encode(u8 *p, u64 orig)
{
	sroce_wire_put64(p, orig);
}

/* AETH syndrome helpers. */
enum sroce_aeth_kind sroce_hdr_syndrome_kind(u8 syndrome);
u8 sroce_hdr_syndrome(enum sroce_aeth_kind kind, u8 value);
u32 sroce_hdr_aeth_credits(u8 code);
u8 sroce_hdr_aeth_credit_code(u32 credits);
u32 sroce_hdr_rnr_timer_us(u8 code);

static inline u8 sroce_hdr_syndrome_value(u8 syndrome)
{
	return syndrome & SROCE_AETH_VALUE_MASK;
}

/* In-place BTH field access. */
static inline u8 sroce_bth_opcode(const u8 *bth)
{
	return bth[0];
}

static inline u8 sroce_bth_pad(const u8 *bth)
{
	return (bth[1] & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT;
}

static inline u8 sroce_bth_tver(const u8 *bth)
{
	return bth[1] & SROCE_BTH_TVER_MASK;
}

static inline u16 sroce_bth_pkey(const u8 *bth)
{
	return sroce_wire_get16(bth + 2);
}

static inline bool sroce_bth_becn(const u8 *bth)
{
	return bth[4] & SROCE_BTH_BECN;
}

static inline u32 sroce_bth_qpn(const u8 *bth)
{
	return sroce_wire_get24(bth + 5);
}

static inline bool sroce_bth_ack_req(const u8 *bth)
{
	return bth[8] & SROCE_BTH_ACKREQ;
}

static inline u32 sroce_bth_psn(const u8 *bth)
{
	return sroce_wire_get24(bth + 9);
}

static inline void sroce_bth_set_qpn(u8 *bth, u32 qpn)
{
	sroce_wire_put24(bth + 5, qpn);
}

static inline void sroce_bth_set_psn(u8 *bth, u32 psn)
{
	sroce_wire_put24(bth + 9, psn);
}

static inline void sroce_bth_set_ack_req(u8 *bth, bool ack_req)
{
	bth[8] = (u8)((bth[8] & SROCE_BTH_RESV7_MASK) |
		      (ack_req ? SROCE_BTH_ACKREQ : 0));
}

static inline void sroce_bth_set_becn(u8 *bth, bool becn)
{
	bth[4] = (u8)((bth[4] & ~SROCE_BTH_BECN) | (becn ? SROCE_BTH_BECN : 0));
}

#endif /* SROCE_CORE_HDR_H */
