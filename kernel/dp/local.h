/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_LOCAL_H
#define SROCE_LOCAL_H

#include <rdma/sroce-abi.h>

#include "core/rc.h"

struct sroce_qp;

bool sroce_local_op(const struct sroce_qp *qp, u32 opcode, u8 *wc_opcode);
enum sroce_wc_status sroce_local_execute(struct sroce_qp *qp,
					 const struct sroce_send_wqe *wqe);

#endif /* SROCE_LOCAL_H */
