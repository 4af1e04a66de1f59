/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

struct ib_umem;
struct page;
struct sroce_dev;

/*
 * Keys.  An lkey or rkey is a 24-bit index into the device's mr_xa, chosen at
 * random, above an 8-bit key byte that belongs to the consumer once the
 * object exists (ib_update_fast_reg_key() changes it for fast-register MRs,
 * a bind picks it for memory windows).  MRs and memory windows share the
 * index space; the xarray entry's tag says which one an index names.  A
 * lookup matches the whole key, so a stale key byte is refused.
 */
#define SROCE_KEY_BYTE		0xffu
#define SROCE_KEY_INDEX_SHIFT	8

enum sroce_key_kind {
	SROCE_KEY_MR = 0,
	SROCE_KEY_MW = 1,
};

static inline unsigned long sroce_key_index(u32 key)
{
	return key >> SROCE_KEY_INDEX_SHIFT;
}

/*
 * A memory region: user memory pinned by reg_user_mr, the DMA MR of a
 * kernel PD, which covers all kernel virtual addresses (sroce has no DMA
 * device, so ib_core hands kernel ULPs kernel virtual addresses as "DMA"
 * addresses), or a fast-register MR of a kernel PD (alloc_mr), which is
 * valid only between an IB_WR_REG_MR and its invalidation.
 *
 * The fields of user and DMA MRs never change once the key is published.
 * Those of a fast-register MR marked (fr) change with IB_WR_REG_MR and
 * invalidation, under lock; lookups check them under lock too.  lock also
 * guards num_mw and dying.  Lifetime rules: see the head of mr.c.
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct ib_pd *pd;		/* ibmr.pd is set by ib_core too late */
	u32 key;			/* lkey == rkey in force (fr) */
	bool valid;			/* may be used (fr: registered) */
	bool fast_reg;			/* allocated by alloc_mr */
	bool dma;			/* DMA MR: iova is a kernel address */
	bool dying;			/* being deregistered: no new binds */
	u64 iova;			/* first byte's address for the peer (fr) */
	u64 length;			/* (fr) */
	u32 access;			/* IB_ACCESS_* honoured, optional dropped (fr) */
	unsigned int num_mw;		/* memory windows bound to it */
	spinlock_t lock;		/* see above */
	unsigned int page_offset;	/* of iova in pages[0] */
	unsigned long npages;
	struct page **pages;		/* user MR only */
	struct ib_umem *umem;		/* user MR only */
	/* fast-register MR: page addresses are kernel virtual addresses */
	u64 *map;			/* filled by map_mr_sg */
	u64 *fr_pages;			/* registered by IB_WR_REG_MR (fr) */
	u32 max_pages;			/* capacity of map and fr_pages */
	u32 map_npages;			/* entries of map filled */
	unsigned int page_shift;	/* (fr) */
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
struct sroce_mr *sroce_mr_find(struct sroce_dev *sdev, u32 key);
struct sroce_mr *sroce_mr_get_ref(struct sroce_mr *mr, u32 key,
				  struct ib_pd *pd, u32 access, u64 iova,
				  u64 len, enum sroce_mr_fault *fault);
void sroce_mr_put(struct sroce_mr *mr);
bool sroce_mr_bind_window(struct sroce_mr *mr);
void sroce_mr_unbind_window(struct sroce_mr *mr);
int sroce_mr_invalidate(struct sroce_mr *mr, u32 key, struct ib_pd *pd);
int sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd, u32 key,
		      int access);

int sroce_mr_key_publish(struct sroce_dev *sdev, void *obj,
			 enum sroce_key_kind kind, u32 *key);
void *sroce_mr_key_lookup(struct sroce_dev *sdev, u32 key,
			  enum sroce_key_kind *kind);
int sroce_mr_copy(struct sroce_mr *mr, u32 key, u32 access, u64 iova,
		  void *buf, u64 len, enum sroce_mr_dir dir, u32 *crc);
/* What sroce_mr_atomic() does to the word. */
enum sroce_mr_atomic_op {
	SROCE_MR_CMP_SWAP,
	SROCE_MR_FETCH_ADD,
	SROCE_MR_WRITE,		/* ATOMIC WRITE: store swap_add */
};

int sroce_mr_atomic(struct sroce_mr *mr, u32 key, u64 iova,
		    enum sroce_mr_atomic_op op, u64 compare, u64 swap_add,
		    u64 *orig);

void sroce_mr_dev_init(struct sroce_dev *sdev);
void sroce_mr_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_mr_ops;

#endif /* SROCE_MR_H */
