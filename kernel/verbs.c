// SPDX-License-Identifier: GPL-2.0
/*
 * ib_device_ops of the control path: device and port queries, user contexts
 * and protection domains.  Argument checking and udata copies live here;
 * protocol logic does not.
 */
#include <linux/minmax.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME sroce
#include <rdma/uverbs_named_ioctl.h>

#include "core/port.h"
#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "verbs.h"
#include "version.h"

/* The core's port tables are indexed by these IBTA values, so pin them. */
static_assert((int)SROCE_MTU_256 == (int)IB_MTU_256);
static_assert((int)SROCE_MTU_4096 == (int)IB_MTU_4096);
static_assert((int)SROCE_PORT_DOWN == (int)IB_PORT_DOWN);
static_assert((int)SROCE_PORT_ACTIVE == (int)IB_PORT_ACTIVE);
static_assert((int)SROCE_PHYS_POLLING == (int)IB_PORT_PHYS_STATE_POLLING);
static_assert((int)SROCE_PHYS_DISABLED == (int)IB_PORT_PHYS_STATE_DISABLED);
static_assert((int)SROCE_PHYS_LINK_UP == (int)IB_PORT_PHYS_STATE_LINK_UP);

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = SROCE_FW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->vendor_id = SROCE_VENDOR_ID;
	attr->vendor_part_id = SROCE_VENDOR_PART_ID;
	attr->hw_ver = SROCE_UVERBS_ABI_VERSION;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_pd = SROCE_MAX_PD;
	attr->max_cq = SROCE_MAX_CQ;
	attr->max_cqe = SROCE_MAX_CQE;
	attr->max_mr = SROCE_MAX_MR;
	attr->max_mr_size = SROCE_MAX_MR_SIZE;
	attr->max_mw = SROCE_MAX_MW;
	attr->max_fast_reg_page_list_len = SROCE_MAX_FAST_REG_PAGES;
	attr->max_qp = SROCE_MAX_QP;
	attr->max_qp_wr = SROCE_MAX_QP_WR;
	attr->max_send_sge = SROCE_MAX_SGE;
	attr->max_recv_sge = SROCE_MAX_SGE;
	attr->max_sge_rd = SROCE_MAX_SGE;
	attr->max_qp_rd_atom = SROCE_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = SROCE_MAX_QP_RD_ATOM;
	attr->max_srq = SROCE_MAX_SRQ;
	attr->max_srq_wr = SROCE_MAX_SRQ_WR;
	attr->max_srq_sge = SROCE_MAX_SRQ_SGE;
	attr->max_pkeys = SROCE_PKEY_TABLE_LEN;
	attr->max_ah = SROCE_MAX_AH;
	attr->max_mcast_grp = SROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SROCE_MAX_MCAST_GRP *
					  SROCE_MAX_MCAST_QP_ATTACH;
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_XRC |
				 SROCE_DEVICE_PLACEMENT_CAPS;
	SROCE_CHECK_PLACEMENT_ABI();
	/* The device clock of completion timestamps (sroce-abi.h). */
	attr->timestamp_mask = SROCE_COMPLETION_TIMESTAMP_MASK;
	attr->hca_core_clock = SROCE_HCA_CORE_CLOCK_KHZ;
	/* Lets "rdma link delete" remove the device. */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	return 0;
}

static int sroce_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sroce_dev(ibdev);
	struct sroce_port_status st = sroce_device_port_status(sdev);
	bool usable;

	attr->state = (enum ib_port_state)st.state;
	attr->phys_state = st.phys_state;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = (enum ib_mtu)sroce_mtu_from_netdev(READ_ONCE(sdev->ndev->mtu),
							      &usable);
	attr->gid_tbl_len = SROCE_GID_TABLE_LEN;
	attr->pkey_tbl_len = SROCE_PKEY_TABLE_LEN;
	attr->max_vl_num = 1;
	attr->max_msg_sz = SROCE_MAX_MSG_SZ;
	return ib_get_eth_speed(ibdev, port, &attr->active_speed,
				&attr->active_width);
}

/*
 * RoCE v2 only: without IB_MAD and IB_CM in the capabilities ib_core creates
 * no GSI QP on this device, which sroce cannot host before it has QPs.
 */
static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	/* RoCE v2 with the MAD layer and the CM on the GSI QP. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = SROCE_GID_TABLE_LEN;
	immutable->pkey_tbl_len = SROCE_PKEY_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int sroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index >= SROCE_PKEY_TABLE_LEN)
		return -EINVAL;
	*pkey = SROCE_DEFAULT_PKEY;
	return 0;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%s", SROCE_VERSION);
}

/* What a provider context needs of its kernel ucontext. */
static const struct sroce_alloc_ucontext_resp sroce_ucontext_resp = {
	.abi_version = SROCE_UVERBS_ABI_VERSION,
	.max_inline_data = SROCE_MAX_INLINE_DATA,
};

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct sroce_alloc_ucontext_resp resp = sroce_ucontext_resp;
	int err;

	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		return err;
	sroce_obj_get(SROCE_OBJ_UCONTEXT);
	return 0;
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	sroce_obj_put(SROCE_OBJ_UCONTEXT);
}

/*
 * UVERBS_METHOD_QUERY_CONTEXT, for a process that imports a context from a
 * command fd (ibv_import_device): the GET_CONTEXT tail again, in the
 * mandatory SROCE_ATTR_QUERY_CONTEXT_RESP.  ib_core has checked that the
 * user buffer holds at least the whole structure (UVERBS_ATTR_MIN_SIZE
 * below) and at most 64 KiB; a longer one, from a provider that knows
 * fields appended later, is zeroed past it.
 */
static int sroce_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	struct sroce_alloc_ucontext_resp resp = sroce_ucontext_resp;

	return uverbs_copy_to_struct_or_zero(attrs,
					     SROCE_ATTR_QUERY_CONTEXT_RESP,
					     &resp, sizeof(resp));
}

/*
 * Called when the device goes away under a process that still has it open.
 * ib_core has already destroyed the process's objects; sroce keeps no other
 * per-context state, so there is nothing left to cut off.  Providing the op
 * is what lets "rdma link delete" and module unload proceed instead of
 * waiting for every such process to exit.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The driver part of a create command: no request fields are defined yet,
 * so a non-zero byte there is something the caller expects sroce to honour
 * and it would silently ignore: refuse it.  The response must have room for
 * resp_len bytes, which carry the mmap keys without which the object's rings
 * cannot be mapped.
 */
int sroce_verbs_check_udata(struct ib_udata *udata, size_t resp_len)
{
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (udata->outlen < resp_len)
		return -EINVAL;
	return 0;
}

/**
 * sroce_verbs_ucontext - check a create command's udata, find its context
 * @udata: the command's udata; NULL for a kernel caller
 * @resp_len: the driver response's size, as for sroce_verbs_check_udata()
 *
 * Return: the user context whose mmap entries the object's rings join, NULL
 * for a kernel caller, or an ERR_PTR of sroce_verbs_check_udata()'s error.
 */
struct ib_ucontext *sroce_verbs_ucontext(struct ib_udata *udata,
					 size_t resp_len)
{
	int err;

	if (!udata)
		return NULL;
	err = sroce_verbs_check_udata(udata, resp_len);
	if (err)
		return ERR_PTR(err);
	return &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					  ibuc)->ibuc;
}

static int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibpd->device);
	struct sroce_pd *pd = to_sroce_pd(ibpd);
	struct sroce_alloc_pd_resp resp = {};
	int pdn, err;

	pdn = ida_alloc_range(&sdev->pd_ida, 1, SROCE_MAX_PD, GFP_KERNEL);
	if (pdn < 0)
		return pdn == -ENOSPC ? -ENOMEM : pdn;
	pd->pdn = pdn;

	if (udata) {
		resp.pdn = pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_free;
	}
	sroce_obj_get(SROCE_OBJ_PD);
	return 0;

err_free:
	ida_free(&sdev->pd_ida, pdn);
	return err;
}

static int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibpd->device);

	ida_free(&sdev->pd_ida, to_sroce_pd(ibpd)->pdn);
	sroce_obj_put(SROCE_OBJ_PD);
	return 0;
}

/*
 * SROCE_METHOD_PD_QUERY, for ibv_import_pd: the pdn of a PD handle.  ib_core
 * has looked the handle up in the caller's own file before the handler runs
 * (a PD of this ucontext, held for reading until it returns); an unknown
 * handle, or one of another type, never gets here (ENOENT, EINVAL).
 */
static int UVERBS_HANDLER(SROCE_METHOD_PD_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_pd *ibpd = uverbs_attr_get_obj(attrs,
						 SROCE_ATTR_QUERY_PD_HANDLE);
	u32 pdn;

	if (IS_ERR(ibpd))
		return PTR_ERR(ibpd);
	pdn = to_sroce_pd(ibpd)->pdn;
	return uverbs_copy_to(attrs, SROCE_ATTR_QUERY_PD_RESP_PDN, &pdn,
			      sizeof(pdn));
}

DECLARE_UVERBS_NAMED_METHOD(SROCE_METHOD_PD_QUERY,
			    UVERBS_ATTR_IDR(SROCE_ATTR_QUERY_PD_HANDLE,
					    UVERBS_OBJECT_PD,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(SROCE_ATTR_QUERY_PD_RESP_PDN,
						UVERBS_ATTR_TYPE(u32),
						UA_MANDATORY));

ADD_UVERBS_METHODS(sroce_pd_methods, UVERBS_OBJECT_PD,
		   &UVERBS_METHOD(SROCE_METHOD_PD_QUERY));

#define SROCE_UCTX_RESP_LEN sizeof(struct sroce_alloc_ucontext_resp)

ADD_UVERBS_ATTRIBUTES_SIMPLE(sroce_query_context_attrs, UVERBS_OBJECT_DEVICE,
			     UVERBS_METHOD_QUERY_CONTEXT,
			     UVERBS_ATTR_PTR_OUT(SROCE_ATTR_QUERY_CONTEXT_RESP,
						 UVERBS_ATTR_MIN_SIZE(SROCE_UCTX_RESP_LEN),
						 UA_MANDATORY));

/* The driver's additions to the uverbs ioctl interface (ib_device.driver_def). */
const struct uapi_definition sroce_verbs_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_PD, &sroce_pd_methods),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE,
				&sroce_query_context_attrs),
	{}
};

const struct ib_device_ops sroce_verbs_ops = {
	.owner = THIS_MODULE,
	.driver_id = SROCE_DRIVER_ID,
	.uverbs_abi_ver = SROCE_UVERBS_ABI_VERSION,

	.dealloc_driver = sroce_device_dealloc_driver,
	.enable_driver = sroce_device_enable_driver,
	.query_device = sroce_query_device,
	.query_port = sroce_query_port,
	.get_port_immutable = sroce_get_port_immutable,
	.get_link_layer = sroce_get_link_layer,
	.query_pkey = sroce_query_pkey,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.alloc_ucontext = sroce_alloc_ucontext,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.query_ucontext = sroce_query_ucontext,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.alloc_pd = sroce_alloc_pd,
	.dealloc_pd = sroce_dealloc_pd,

	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
};
