/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_VERBS_H
#define SROCE_VERBS_H

#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/sroce-abi.h>

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

static inline struct sroce_pd *to_sroce_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

int sroce_verbs_check_udata(struct ib_udata *udata, size_t resp_len);
struct ib_ucontext *sroce_verbs_ucontext(struct ib_udata *udata,
					 size_t resp_len);

extern const struct ib_device_ops sroce_verbs_ops;
extern const struct uapi_definition sroce_verbs_uapi_defs[];

#endif /* SROCE_VERBS_H */
