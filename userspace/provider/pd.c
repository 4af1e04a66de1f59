// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: protection domains.
 *
 * The kernel returns, besides the uverbs handle, its own PD number; the
 * provider keeps it for the work requests and memory regions that later
 * refer to the PD.
 */
#include <errno.h>
#include <stdlib.h>

#include "abi.h"
#include "sroce.h"

struct ibv_pd *sroce_pd_alloc(struct ibv_context *ibctx)
{
	struct verbs_cmd_alloc_pd cmd = {};
	union sroce_alloc_pd_reply reply = {};
	struct sroce_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(ibctx, &pd->base_pd, &cmd, sizeof(cmd),
			       &reply.core, sizeof(reply));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}

	pd->pdn = reply.tail.drv.pdn;
	return &pd->base_pd;
}

/* On failure the PD stays alive and owned by the caller. */
int sroce_pd_dealloc(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_sroce_pd(ibpd));
	return 0;
}
