// SPDX-License-Identifier: GPL-2.0
/*
 * Local scatter/gather lists: the SGEs of a work request, addressed as one
 * contiguous message.  Every access looks the lkey up again and checks it
 * against the QP's PD, the access the direction needs (local write to fill
 * an SGE) and the SGE's bounds, so a deregistered or foreign MR is refused
 * at the packet that would touch it, never used.
 */
#include "device.h"
#include "dp/sgl.h"
#include "obj/qp.h"

/* Total bytes an SGE list describes; *overflow if above the largest message. */
u64 sroce_sgl_length(const struct sroce_sge *sge, u32 num_sge, bool *overflow)
{
	u64 len = 0;
	u32 i;

	*overflow = false;
	for (i = 0; i < num_sge; i++)
		len += sge[i].length;
	if (len > SROCE_MAX_MSG_LEN)
		*overflow = true;
	return len;
}

/**
 * sroce_sgl_copy - copy between a buffer and a message in an SGE list
 * @qp: the QP whose PD the lkeys must belong to
 * @sge: the list
 * @num_sge: its length
 * @off: byte of the message where the copy starts
 * @buf: kernel buffer of @len bytes
 * @len: bytes to copy
 * @dir: SROCE_MR_TO_MR fills the SGEs from @buf, SROCE_MR_FROM_MR reads them
 * @crc: NULL, or (SROCE_MR_FROM_MR only) a crc32_le() state the bytes
 *	 copied are folded into, in the message's order
 *
 * Return: SROCE_WC_SUCCESS; SROCE_WC_LOC_LEN_ERR if the list is shorter
 * than @off + @len; SROCE_WC_LOC_PROT_ERR if an lkey is unknown, of
 * another PD, lacks local write, or the SGE lies outside its MR.
 */
enum sroce_wc_status sroce_sgl_copy(struct sroce_qp *qp,
				    const struct sroce_sge *sge, u32 num_sge,
				    u64 off, void *buf, u32 len,
				    enum sroce_mr_dir dir, u32 *crc)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	u32 access = dir == SROCE_MR_TO_MR ? IB_ACCESS_LOCAL_WRITE : 0;
	enum sroce_mr_fault fault;
	struct sroce_mr *mr;
	u32 i, chunk;
	int err;

	for (i = 0; i < num_sge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		chunk = min_t(u64, len, sge[i].length - off);
		mr = sroce_mr_get(sdev, sge[i].lkey, sroce_qp_pd(qp), access,
				  sge[i].addr + off, chunk, &fault);
		if (!mr)
			return SROCE_WC_LOC_PROT_ERR;
		err = sroce_mr_copy(mr, sge[i].lkey, access, sge[i].addr + off,
				    buf, chunk, dir, crc);
		sroce_mr_put(mr);
		if (err)
			return SROCE_WC_LOC_PROT_ERR;
		buf += chunk;
		len -= chunk;
		off = 0;
	}
	return len ? SROCE_WC_LOC_LEN_ERR : SROCE_WC_SUCCESS;
}
