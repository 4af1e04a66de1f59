// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: XRC domains.
 *
 * An XRCD is a kernel object and nothing else: ib_core keeps the table
 * that lets processes share one through a file (ibv_xrcd_init_attr's fd
 * and oflags), and the sroce driver takes no request data and returns
 * none.  The provider keeps only libibverbs' struct verbs_xrcd, whose
 * handle libibverbs' own helpers read when an XRC SRQ or XRC receive QP
 * is made in the domain (srq.c, qp.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "sroce.h"

struct ibv_xrcd *sroce_xrcd_open(struct ibv_context *ibctx,
				 struct ibv_xrcd_init_attr *attr)
{
	struct verbs_cmd_open_xrcd cmd = {};
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd)
		return NULL;
	ret = ibv_cmd_open_xrcd(ibctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

/* Refused by the kernel (EBUSY) while SRQs or QPs of this file use it. */
int sroce_xrcd_close(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd =
		sroce_container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret;

	ret = ibv_cmd_close_xrcd(xrcd);
	if (ret)
		return ret;
	free(xrcd);
	return 0;
}
