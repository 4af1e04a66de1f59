/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_VERBS_H
#define SROCE_VERBS_H

#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/*
 * Queue pairs arrive with the data path.  ib_core allocates the driver object
 * before calling create, so the type exists now to give it the right size.
 */
struct sroce_qp {
	struct ib_qp ibqp;
};

static inline struct sroce_pd *to_sroce_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

extern const struct ib_device_ops sroce_verbs_ops;
extern const struct ib_device_ops sroce_unimplemented_ops;

#endif /* SROCE_VERBS_H */
