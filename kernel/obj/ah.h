/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_AH_H
#define SROCE_AH_H

#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <rdma/ib_verbs.h>

#include "obj/qp.h"

struct sroce_dev;

/*
 * The resolved destination of an address handle.  It is the driver's own
 * object, counted: ib_core frees struct ib_ah when destroy_ah returns, but a
 * UD send WQE that named the AH keeps its destination until the datagram
 * is built.  pd is compared, never dereferenced.
 */
struct sroce_ah_dest {
	refcount_t count;		/* 1 for the AH, 1 per user */
	struct sroce_qp_av av;		/* holds the source GID attribute */
	const struct ib_pd *pd;
	struct rcu_head rcu;
};

struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_ah_dest *dest;
	u32 ahn;
};

static inline struct sroce_ah *to_sroce_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

struct sroce_ah_dest *sroce_ah_get(struct sroce_dev *sdev, u32 ahn,
				   const struct ib_pd *pd);
void sroce_ah_put(struct sroce_ah_dest *dest);

void sroce_ah_dev_init(struct sroce_dev *sdev);
void sroce_ah_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_ah_ops;

#endif /* SROCE_AH_H */
