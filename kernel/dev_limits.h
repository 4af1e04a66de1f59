/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Device limits.  Every number query_device or query_port reports comes from
 * here, and each is enforced where the object is created; a limit of zero
 * means the object type is not implemented yet.  Documentation/admin-guide.md
 * lists the same table.
 */
#ifndef SROCE_DEV_LIMITS_H
#define SROCE_DEV_LIMITS_H

#include <linux/bits.h>

#define SROCE_MAX_PD		BIT(16)		/* pd_ida range */
#define SROCE_GID_TABLE_LEN	128		/* ib_core's GID cache size */
#define SROCE_PKEY_TABLE_LEN	1		/* RoCE has only the default */
#define SROCE_DEFAULT_PKEY	0xffff
#define SROCE_MAX_INLINE_DATA	512		/* SQ slot of 1 KiB at most */
#define SROCE_MAX_CQ		BIT(14)		/* cq_ida range; a ring and a VMA each */
#define SROCE_MAX_CQE		BIT(22)		/* 256 MiB ring; ofi_rxm asks 2^18 */
#define SROCE_MAX_MR		BIT(16)		/* mr_count bound */
#define SROCE_MAX_MR_SIZE	BIT_ULL(36)	/* 64 GiB: 128 MiB page array */
#define SROCE_MAX_FAST_REG_PAGES 512		/* pages of a fast-register MR */
#define SROCE_MAX_MW		BIT(16)		/* mw_count bound */

#define SROCE_MAX_QP		BIT(14)		/* QPNs 2..SROCE_MAX_QP + 1; two rings each */
#define SROCE_MAX_QP_WR		BIT(14)		/* WQEs per SQ or RQ: 16 MiB rings at most */
#define SROCE_MAX_SGE		32		/* per SQ or RQ WQE: 1 KiB slots at most */
#define SROCE_MAX_QP_RD_ATOM	128		/* RDMA reads/atomics in flight, each way */
#define SROCE_MAX_MSG_SZ	BIT(31)		/* IBTA's largest message */
#define SROCE_MAX_AH		BIT(16)		/* ah_xa range */
#define SROCE_MAX_MCAST_GRP	256		/* groups per device */
#define SROCE_MAX_MCAST_QP_ATTACH 64		/* QPs per group */

#define SROCE_MAX_SRQ		BIT(14)		/* srq_ida range; a ring and a VMA each */
#define SROCE_MAX_SRQ_WR	BIT(14)		/* WQEs per SRQ: 16 MiB ring at most */
#define SROCE_MAX_SRQ_SGE	SROCE_MAX_SGE	/* per WQE: 1 KiB slots at most */

#endif /* SROCE_DEV_LIMITS_H */
