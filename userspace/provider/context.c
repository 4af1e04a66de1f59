// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: user context lifetime and the table of context ops.
 *
 * Operations left NULL in sroce_ctx_ops keep libibverbs' defaults, which
 * fail with EOPNOTSUPP (or ENOSYS); each object file that implements more
 * verbs adds its entries here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "abi.h"
#include "cmdb.h"
#include "sroce.h"

static void sroce_context_free(struct ibv_context *ibctx);

static const struct verbs_context_ops sroce_ctx_ops = {
	.alloc_mw = sroce_mw_alloc,
	.alloc_parent_domain = sroce_pdom_alloc,
	.alloc_pd = sroce_pd_alloc,
	.alloc_td = sroce_td_alloc,
	.attach_mcast = sroce_mcast_attach,
	.bind_mw = sroce_mw_bind,
	.close_xrcd = sroce_xrcd_close,
	.create_ah = sroce_ah_create,
	.create_cq = sroce_cq_create,
	.create_cq_ex = sroce_cq_create_ex,
	.create_qp = sroce_qp_create,
	.create_qp_ex = sroce_qp_create_ex,
	.create_srq = sroce_srq_create,
	.create_srq_ex = sroce_srq_create_ex,
	.dealloc_mw = sroce_mw_dealloc,
	.dealloc_pd = sroce_pd_dealloc,
	.dealloc_td = sroce_td_dealloc,
	.destroy_ah = sroce_ah_destroy,
	.destroy_cq = sroce_cq_destroy,
	.destroy_qp = sroce_qp_destroy,
	.destroy_srq = sroce_srq_destroy,
	.detach_mcast = sroce_mcast_detach,
	.dereg_mr = sroce_mr_dereg,
	.free_context = sroce_context_free,
	.get_srq_num = sroce_srq_get_num,
	.import_mr = sroce_mr_import,
	.import_pd = sroce_pd_import,
	.modify_qp = sroce_qp_modify,
	.modify_srq = sroce_srq_modify,
	.open_qp = sroce_qp_open,
	.open_xrcd = sroce_xrcd_open,
	.poll_cq = sroce_cq_poll,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_device_ex = sroce_query_device,
	.query_port = sroce_query_port,
	.query_qp = sroce_qp_query,
	.query_rt_values = sroce_query_rt_values,
	.query_srq = sroce_srq_query,
	.reg_mr = sroce_mr_reg,
	.req_notify_cq = sroce_cq_req_notify,
	.rereg_mr = sroce_mr_rereg,
	.resize_cq = sroce_cq_resize,
	.unimport_mr = sroce_mr_unimport,
	.unimport_pd = sroce_pd_unimport,
};

/* What the kernel said of the ucontext, at GET_CONTEXT or QUERY_CONTEXT. */
static int sroce_context_setup(struct sroce_context *ctx,
			       const struct sroce_alloc_ucontext_resp *drv)
{
	if (drv->abi_version != SROCE_UVERBS_ABI_VERSION) {
		sroce_err(ctx, "kernel speaks sroce ABI %u, provider %d",
			  drv->abi_version, SROCE_UVERBS_ABI_VERSION);
		return EPROTO;
	}

	ctx->features = drv->features;
	ctx->max_inline_data = drv->max_inline_data;
	return 0;
}

/*
 * GET_CONTEXT creates the kernel ucontext.  The driver tail tells us which
 * layout version the kernel speaks; the uverbs ABI version libibverbs matched
 * on should already guarantee ours, but a zero here also catches a kernel
 * that returned no driver data at all (the reply starts zeroed).
 */
static int sroce_get_context(struct sroce_context *ctx)
{
	struct verbs_cmd_get_context cmd = {};
	union sroce_get_context_reply reply = {};
	int ret;

	ret = ibv_cmd_get_context(&ctx->base_ctx, &cmd, sizeof(cmd),
				  &reply.core, sizeof(reply));
	if (ret)
		return ret;

	return sroce_context_setup(ctx, &reply.tail.drv);
}

/* The start of both ways to a context; it owns cmd_fd from here on. */
static struct sroce_context *sroce_context_new(struct ibv_device *ibdev,
					       int cmd_fd)
{
	/* libibverbs takes the offset of base_ctx disguised as a pointer */
	struct verbs_context *base_at = (struct verbs_context *)(uintptr_t)
		offsetof(struct sroce_context, base_ctx);

	return _verbs_init_and_alloc_context(ibdev, cmd_fd,
					     sizeof(struct sroce_context),
					     base_at, SROCE_DRIVER_ID);
}

/* The end of both ways to a context: on failure it and cmd_fd go. */
static struct verbs_context *sroce_context_finish(struct sroce_context *ctx,
						  int ret)
{
	if (ret) {
		verbs_uninit_context(&ctx->base_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	verbs_set_ops(&ctx->base_ctx, &sroce_ctx_ops);
	return &ctx->base_ctx;
}

/*
 * Owns cmd_fd from the start: both the libibverbs allocator and
 * verbs_uninit_context() close it on failure, as libibverbs expects.
 */
struct verbs_context *sroce_context_alloc(struct ibv_device *ibdev,
					  int cmd_fd, void *private_data)
{
	struct sroce_context *ctx;
	int ret;

	(void)private_data;
	ctx = sroce_context_new(ibdev, cmd_fd);
	if (!ctx)
		return NULL;

	ret = sroce_get_context(ctx);
	return sroce_context_finish(ctx, ret);
}

/*
 * ibv_import_device(): cmd_fd (a dup of another context's, possibly from
 * another process) already has its kernel ucontext, so instead of
 * GET_CONTEXT the provider asks ib_core's QUERY_CONTEXT, with sroce's
 * attribute for the GET_CONTEXT tail; libibverbs then gives the context its
 * own async fd.  Like sroce_context_alloc() it owns cmd_fd: on failure it
 * is closed.  An fd whose device went away fails with EIO.
 */
struct verbs_context *sroce_context_import(struct ibv_device *ibdev,
					   int cmd_fd)
{
	struct ibv_command_buffer drv_cmdb[VERBS_CMDB_LEN(1)];
	struct sroce_alloc_ucontext_resp drv = {};
	struct sroce_context *ctx;
	int ret;

	ctx = sroce_context_new(ibdev, cmd_fd);
	if (!ctx)
		return NULL;

	sroce_cmdb_init(drv_cmdb, 1, UVERBS_OBJECT_DEVICE,
			UVERBS_METHOD_QUERY_CONTEXT);
	sroce_cmdb_out(drv_cmdb, SROCE_ATTR_QUERY_CONTEXT_RESP, &drv,
		       sizeof(drv));
	ret = ibv_cmd_query_context(&ctx->base_ctx.context, drv_cmdb);
	if (!ret)
		ret = sroce_context_setup(ctx, &drv);
	return sroce_context_finish(ctx, ret);
}

static void sroce_context_free(struct ibv_context *ibctx)
{
	struct sroce_context *ctx = to_sroce_ctx(ibctx);

	verbs_uninit_context(&ctx->base_ctx);
	free(ctx);
}
