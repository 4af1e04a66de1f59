// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: memory windows.
 *
 * Allocation is the kernel's business: it chooses the rkey (a random index
 * in the upper 24 bits, the key byte in the low 8) and the provider keeps
 * the libibverbs object.  Binding is a work request: a type 2 window is
 * bound by an IBV_WR_BIND_MW the application posts (wq.c), a type 1 window
 * by ibv_bind_mw(), which arrives here and is posted the same way with the
 * next key byte (ibv_inc_rkey()).  As the verbs define it, the window's new
 * rkey is in mw->rkey when ibv_bind_mw() returns; the bind itself happens,
 * or fails with IBV_WC_MW_BIND_ERR, when the QP executes the WR in order.
 */
#include <errno.h>
#include <stdlib.h>

#include "sroce.h"

struct ibv_mw *sroce_mw_alloc(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct verbs_cmd_alloc_mw cmd = {};
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

/* On failure the window stays allocated and owned by the caller. */
int sroce_mw_dealloc(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/*
 * libibverbs' ibv_bind_mw() already refused windows of type 2, a range
 * without an MR and an MR of another PD.
 */
int sroce_mw_bind(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int ret;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = sroce_post_bind_type1(ibqp, &wr, &bad);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
