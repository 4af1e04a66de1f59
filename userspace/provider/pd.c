// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: protection domains.
 *
 * The kernel returns, besides the uverbs handle, its own PD number; the
 * provider keeps it for the work requests and memory regions that later
 * refer to the PD.
 *
 * Thread domains and parent domains live only here: the kernel knows
 * nothing of them.  A parent domain copies its PD's uverbs handle and pdn,
 * so the commands libibverbs builds from it (create_qp, create_srq,
 * reg_mr, create_ah, alloc_mw) name the real PD, and an object made
 * through a parent domain is the kernel's object of that PD.  What a TD
 * changes is the posting lock of the QPs and SRQs made through a parent
 * domain that names one (sroce_wq_lock()).  The custom allocators are
 * accepted and never called: everything the provider allocates per QP,
 * SRQ or CQ is the object itself (the libibverbs object the application
 * holds is embedded in it) and the kernel's rings are mmap'ed, so there is
 * no separate buffer of the provider's for an allocator to serve, and
 * verbs.h defines no generic resource type to ask for one with.
 */
#include <errno.h>
#include <stdlib.h>

#include "abi.h"
#include "cmdb.h"
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

/*
 * A parent domain is freed here too; it lets go of its PD and TD.  A PD
 * that parent domains still use stays (EBUSY), as the kernel would keep a
 * PD its objects use.  On failure the PD stays alive and owned by the
 * caller.
 */
int sroce_pd_dealloc(struct ibv_pd *ibpd)
{
	struct sroce_pd *pd = to_sroce_pd(ibpd);
	int ret;

	if (pd->parent) {
		__atomic_fetch_sub(&pd->parent->users, 1, __ATOMIC_RELEASE);
		if (pd->td)
			__atomic_fetch_sub(&pd->td->users, 1,
					   __ATOMIC_RELEASE);
		free(pd);
		return 0;
	}
	if (__atomic_load_n(&pd->users, __ATOMIC_ACQUIRE))
		return EBUSY;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_sroce_pd(ibpd));
	return 0;
}

/*
 * ibv_import_pd(): the PD pd_handle names in this context's command fd,
 * which may be another process's or another context's PD.  The kernel
 * validates the handle at once, with sroce's SROCE_METHOD_PD_QUERY (an
 * unknown handle: ENOENT; another object's: EINVAL), and returns the pdn
 * that a PD of the provider carries.  The imported PD is a PD like any
 * other (ibv_dealloc_pd() destroys the kernel's PD).
 */
struct ibv_pd *sroce_pd_import(struct ibv_context *ibctx, uint32_t pd_handle)
{
	struct ibv_command_buffer cmdb[VERBS_CMDB_LEN(2)];
	struct sroce_pd *pd;
	uint32_t pdn = 0;
	int ret;

	sroce_cmdb_init(cmdb, 2, UVERBS_OBJECT_PD, SROCE_METHOD_PD_QUERY);
	sroce_cmdb_in_obj(cmdb, SROCE_ATTR_QUERY_PD_HANDLE, pd_handle);
	sroce_cmdb_out(cmdb, SROCE_ATTR_QUERY_PD_RESP_PDN, &pdn, sizeof(pdn));
	ret = execute_ioctl(ibctx, cmdb);
	if (ret) {
		errno = ret;
		return NULL;
	}

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->base_pd.context = ibctx;
	pd->base_pd.handle = pd_handle;
	pd->pdn = pdn;
	return &pd->base_pd;
}

/*
 * ibv_unimport_pd(): frees the provider's PD and leaves the kernel's alone
 * (it lives until someone deallocates it or its command fd is closed).
 * Any PD may be unimported, imported or not.  A parent domain is let go of
 * as sroce_pd_dealloc() does; a PD that parent domains still use must not
 * be unimported (ibv_unimport_pd() cannot fail), as it must not be freed.
 */
void sroce_pd_unimport(struct ibv_pd *ibpd)
{
	struct sroce_pd *pd = to_sroce_pd(ibpd);

	if (pd->parent) {
		sroce_pd_dealloc(ibpd);
		return;
	}
	free(pd);
}

/*
 * The PD must be a real PD of this context (a parent domain of a parent
 * domain is not one), the TD one of this context or none.
 */
struct ibv_pd *sroce_pdom_alloc(struct ibv_context *ibctx,
				struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct sroce_pd *real, *pd;

	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->pd || attr->pd->context != ibctx ||
	    to_sroce_pd(attr->pd)->parent ||
	    (attr->td && attr->td->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	real = to_sroce_pd(attr->pd);

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->base_pd.context = ibctx;
	pd->base_pd.handle = real->base_pd.handle;
	pd->pdn = real->pdn;
	pd->parent = real;
	if (attr->td) {
		pd->td = to_sroce_td(attr->td);
		__atomic_fetch_add(&pd->td->users, 1, __ATOMIC_RELAXED);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	__atomic_fetch_add(&real->users, 1, __ATOMIC_RELAXED);
	return &pd->base_pd;
}

/* Whether objects made on ibpd are used by one thread at a time. */
bool sroce_pd_single_thread(const struct ibv_pd *ibpd)
{
	return ibpd && to_sroce_pd((struct ibv_pd *)ibpd)->td;
}

/*
 * ibv_create_cq_ex's IBV_CQ_INIT_ATTR_MASK_PD: the PD must be a parent
 * domain of this context, as ibv_create_cq_ex(3) asks.  The CQ takes
 * nothing from it: the kernel CQ belongs to no PD, and the CQ's poll lock
 * stays (a TD is a hint sroce does not need there).
 */
int sroce_cq_pd_check(struct ibv_context *ibctx,
		      const struct ibv_cq_init_attr_ex *attr)
{
	const struct ibv_pd *pd = attr->parent_domain;

	if (!(attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD))
		return 0;
	if (!pd || pd->context != ibctx ||
	    !to_sroce_pd((struct ibv_pd *)pd)->parent)
		return EINVAL;
	return 0;
}

/* Only the count of parent domains using it is the provider's. */
struct ibv_td *sroce_td_alloc(struct ibv_context *ibctx,
			      struct ibv_td_init_attr *attr)
{
	struct sroce_td *td;

	if (attr && attr->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return NULL;
	td->base_td.context = ibctx;
	return &td->base_td;
}

/* A TD that parent domains still use stays (EBUSY). */
int sroce_td_dealloc(struct ibv_td *ibtd)
{
	struct sroce_td *td = to_sroce_td(ibtd);

	if (__atomic_load_n(&td->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(td);
	return 0;
}
