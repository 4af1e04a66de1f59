// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: address handles and multicast attachment of UD QPs.
 *
 * An address handle lives in the kernel, which checks and resolves the
 * attribute (and the destination MAC) once; the provider keeps only the
 * number the kernel gave it, which every UD WQE naming the AH carries
 * (wq.c).  Attaching a QP to a multicast group is a plain command.
 */
#include <errno.h>
#include <stdlib.h>

#include "abi.h"
#include "sroce.h"

struct ibv_ah *sroce_ah_create(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	union sroce_create_ah_reply reply = {};
	struct sroce_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(ibpd, &ah->ibv_ah, attr, &reply.core,
				sizeof(reply));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ahn = reply.tail.drv.ahn;
	return &ah->ibv_ah;
}

int sroce_ah_destroy(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_sroce_ah(ibah));
	return 0;
}

int sroce_mcast_attach(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_attach_mcast(ibqp, gid, lid);
}

int sroce_mcast_detach(struct ibv_qp *ibqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_detach_mcast(ibqp, gid, lid);
}
