/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_MW_H
#define SROCE_MW_H

#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "core/rc.h"
#include "obj/mr.h"

struct sroce_qp;

struct sroce_mr *sroce_mw_get_rkey(struct sroce_qp *qp, u32 rkey, u32 access,
				   u64 va, u64 len, u64 *addr,
				   enum sroce_mr_fault *fault);
enum sroce_wc_status sroce_mw_bind(struct sroce_qp *qp,
				   const struct sroce_send_wqe *wqe);
int sroce_mw_invalidate(struct sroce_qp *qp, u32 key, bool remote);

extern const struct ib_device_ops sroce_mw_ops;

#endif /* SROCE_MW_H */
