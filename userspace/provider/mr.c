// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: memory regions.
 *
 * Registration is entirely the kernel's business (it pins the memory and
 * chooses the key, lkey == rkey); the provider only carries the command and
 * keeps the libibverbs wrapper that ibv_dereg_mr() expects.  No sroce
 * driver data travels either way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "sroce.h"

struct ibv_mr *sroce_mr_reg(struct ibv_pd *ibpd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct verbs_cmd_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct sroce_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;

	ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, &mr->base_mr,
			     &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	return &mr->base_mr.ibv_mr;
}

/* On failure the MR stays registered and owned by the caller. */
int sroce_mr_dereg(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(to_sroce_mr(&vmr->ibv_mr));
	return 0;
}

/*
 * ibv_import_mr(): the MR mr_handle names in pd's context.  ib_core's
 * QUERY_MR checks the handle (ENOENT if the command fd has no such object,
 * EINVAL for another type) and returns the keys and length; the imported
 * MR's addr is NULL (ibv_import_mr(3)) and its access unknown (0).  The
 * kernel does not check that the MR belongs to pd, which is the caller's
 * promise, nor does sroce need it: every key check is the kernel's.
 */
struct ibv_mr *sroce_mr_import(struct ibv_pd *ibpd, uint32_t mr_handle)
{
	struct sroce_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;

	ret = ibv_cmd_query_mr(ibpd, &mr->base_mr, mr_handle);
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	return &mr->base_mr.ibv_mr;
}

/*
 * ibv_unimport_mr(): frees the provider's MR only; the kernel's stays
 * registered until someone deregisters it or its command fd is closed.
 */
void sroce_mr_unimport(struct ibv_mr *ibmr)
{
	free(to_sroce_mr(ibmr));
}

/*
 * The kernel registers the new translation, PD or access under a new key
 * and deregisters the old MR in the same command, so the MR's lkey and
 * rkey change (ibv_cmd_rereg_mr() updates them) and the old key no longer
 * reaches anything; libibverbs updates pd, addr and length.  The hca_va of
 * a new translation is its address, as for ibv_reg_mr().  On failure the
 * MR is as it was.
 */
int sroce_mr_rereg(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access)
{
	struct verbs_cmd_rereg_mr cmd = {};
	struct ib_uverbs_rereg_mr_resp resp = {};
	int ret;

	ret = ibv_cmd_rereg_mr(vmr, (uint32_t)flags, addr, length,
			       (uintptr_t)addr, access, pd, &cmd, sizeof(cmd),
			       &resp, sizeof(resp));
	if (ret)
		errno = ret;
	return ret;
}
