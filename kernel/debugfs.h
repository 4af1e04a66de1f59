/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_DEBUGFS_H
#define SROCE_DEBUGFS_H

#include <linux/atomic.h>

/*
 * Module-wide counts of live objects, for leak checks: after every device is
 * gone each count must be back to zero.  Read from
 * /sys/kernel/debug/sroce/objects.
 */
enum sroce_obj_kind {
	SROCE_OBJ_DEVICE,
	SROCE_OBJ_UCONTEXT,
	SROCE_OBJ_PD,
	SROCE_OBJ_UDP_SOCKET,
	SROCE_OBJ_MR,
	SROCE_OBJ_CQ,
	SROCE_OBJ_RING,
	SROCE_OBJ_QP,
	SROCE_OBJ_AH,
	SROCE_OBJ_AH_DEST,	/* resolved destinations, held by WQEs too */
	SROCE_OBJ_MCAST,
	SROCE_OBJ_SRQ,
	SROCE_OBJ_MW,
	SROCE_OBJ_XRCD,
	SROCE_OBJ_KINDS,
};

extern atomic_t sroce_objs[SROCE_OBJ_KINDS];

static inline void sroce_obj_get(enum sroce_obj_kind kind)
{
	atomic_inc(&sroce_objs[kind]);
}

static inline void sroce_obj_put(enum sroce_obj_kind kind)
{
	atomic_dec(&sroce_objs[kind]);
}

void sroce_debugfs_init(void);
void sroce_debugfs_exit(void);

#endif /* SROCE_DEBUGFS_H */
