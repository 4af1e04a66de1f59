/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * sroce provider: building the uverbs ioctls of the import verbs.
 *
 * A command block (struct ibv_command_buffer, verbs_private.h) is the first
 * of an array of VERBS_CMDB_LEN(n) blocks, the rest being room for its n
 * attributes.  Every attribute is sent mandatory: a kernel that does not
 * know it must refuse the command rather than ignore it.
 */
#ifndef SROCE_CMDB_H
#define SROCE_CMDB_H

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "verbs_private.h"

/* A block of room for num_attrs attributes of object_id's method_id. */
static inline void sroce_cmdb_init(struct ibv_command_buffer *cmdb,
				   unsigned int num_attrs, uint16_t object_id,
				   uint16_t method_id)
{
	memset(cmdb, 0, sizeof(*cmdb));
	cmdb->next_attr = cmdb->hdr.attrs;
	cmdb->last_attr = cmdb->hdr.attrs + num_attrs;
	cmdb->uhw_in_idx = VERBS_CMDB_NO_UHW;
	cmdb->uhw_out_idx = VERBS_CMDB_NO_UHW;
	cmdb->hdr.object_id = object_id;
	cmdb->hdr.method_id = method_id;
}

static inline struct ib_uverbs_attr *
sroce_cmdb_attr(struct ibv_command_buffer *cmdb, uint16_t attr_id)
{
	struct ib_uverbs_attr *attr;

	assert(cmdb->next_attr < cmdb->last_attr);
	attr = cmdb->next_attr++;
	memset(attr, 0, sizeof(*attr));
	attr->attr_id = attr_id;
	attr->flags = UVERBS_ATTR_F_MANDATORY;
	return attr;
}

/* An object handle in (UVERBS_ATTR_IDR): the handle is the 64-bit data. */
static inline void sroce_cmdb_in_obj(struct ibv_command_buffer *cmdb,
				     uint16_t attr_id, uint32_t handle)
{
	sroce_cmdb_attr(cmdb, attr_id)->data = handle;
}

/* A buffer out (UVERBS_ATTR_PTR_OUT) of len bytes, len < 64 KiB. */
static inline void sroce_cmdb_out(struct ibv_command_buffer *cmdb,
				  uint16_t attr_id, void *buf, uint16_t len)
{
	struct ib_uverbs_attr *attr = sroce_cmdb_attr(cmdb, attr_id);

	attr->len = len;
	attr->data = (uintptr_t)buf;
}

#endif /* SROCE_CMDB_H */
