/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <rdma/ib_verbs.h>

struct ib_umem;
struct page;
struct sroce_dev;

/*
 * A memory region: user memory pinned by reg_user_mr, or the DMA MR of a
 * kernel PD, which covers all kernel virtual addresses (sroce has no DMA
 * device, so ib_core hands kernel ULPs kernel virtual addresses as "DMA"
 * addresses).  Everything but ref is fixed once the key is published.
 * Lifetime rules: see the head of mr.c.
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct ib_pd *pd;		/* ibmr.pd is set by ib_core too late */
	u64 iova;			/* first byte's address for the peer */
	u64 length;
	u32 access;			/* IB_ACCESS_* honoured, optional bits dropped */
	bool dma;			/* DMA MR: iova is a kernel address */
	unsigned int page_offset;	/* of iova in pages[0] */
	unsigned long npages;
	struct page **pages;		/* user MR only */
	struct ib_umem *umem;		/* user MR only */
	refcount_t ref;			/* 1 for the key, 1 per sroce_mr_get */
	struct completion released;	/* ref reached zero */
	struct rcu_head rcu;
};

/* Why sroce_mr_get() refused: the data path maps these to NAKs/statuses. */
enum sroce_mr_fault {
	SROCE_MR_OK,
	SROCE_MR_BAD_KEY,	/* no MR with this key (never or no longer) */
	SROCE_MR_BAD_PD,	/* MR belongs to another PD than the QP's */
	SROCE_MR_NO_ACCESS,	/* MR lacks a permission the operation needs */
	SROCE_MR_OUT_OF_BOUNDS,	/* [iova, iova + len) not inside the MR */
};

enum sroce_mr_dir {
	SROCE_MR_TO_MR,		/* write into the MR (receive, RDMA write) */
	SROCE_MR_FROM_MR,	/* read from the MR (send, RDMA read) */
};

static inline struct sroce_mr *to_sroce_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key,
			      struct ib_pd *pd, u32 access, u64 iova, u64 len,
			      enum sroce_mr_fault *fault);
void sroce_mr_put(struct sroce_mr *mr);
int sroce_mr_copy(struct sroce_mr *mr, u64 iova, void *buf, u64 len,
		  enum sroce_mr_dir dir);
u64 *sroce_mr_atomic_map(struct sroce_mr *mr, u64 iova);
void sroce_mr_atomic_unmap(struct sroce_mr *mr, u64 *p);

void sroce_mr_dev_init(struct sroce_dev *sdev);
void sroce_mr_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_mr_ops;

#endif /* SROCE_MR_H */
