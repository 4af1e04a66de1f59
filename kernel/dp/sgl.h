/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_SGL_H
#define SROCE_SGL_H

#include <rdma/sroce-abi.h>

#include "core/rc.h"
#include "obj/mr.h"

struct sroce_qp;

u64 sroce_sgl_length(const struct sroce_sge *sge, u32 num_sge, bool *overflow);
enum sroce_wc_status sroce_sgl_copy(struct sroce_qp *qp,
				    const struct sroce_sge *sge, u32 num_sge,
				    u64 off, void *buf, u32 len,
				    enum sroce_mr_dir dir, u32 *crc);

#endif /* SROCE_SGL_H */
