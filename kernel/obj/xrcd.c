// SPDX-License-Identifier: GPL-2.0
/*
 * XRC domains (IBTA Annex A14): the scope in which XRC target QPs and XRC
 * SRQs meet.  ib_core does all the bookkeeping (sharing a domain between
 * processes through a file, the target QPs a domain holds, use counts), so
 * the device's object is empty; it is counted for leak checks.  What ties a
 * target QP to the SRQs it may deliver into is the domain pointer both keep
 * (kernel/obj/srq.c, sroce_srq_get_xrc()).
 */
#include <rdma/ib_verbs.h>

#include "debugfs.h"
#include "obj/xrcd.h"

struct sroce_xrcd {
	struct ib_xrcd ibxrcd;
};

static int sroce_xrcd_alloc(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	sroce_obj_get(SROCE_OBJ_XRCD);
	return 0;
}

static int sroce_xrcd_dealloc(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	sroce_obj_put(SROCE_OBJ_XRCD);
	return 0;
}

const struct ib_device_ops sroce_xrcd_ops = {
	.alloc_xrcd = sroce_xrcd_alloc,
	.dealloc_xrcd = sroce_xrcd_dealloc,

	INIT_RDMA_OBJ_SIZE(ib_xrcd, sroce_xrcd, ibxrcd),
};
