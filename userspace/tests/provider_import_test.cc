// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The import verbs of the provider (ibv_import_device, ibv_import_pd,
// ibv_import_mr, the unimports) on the fake uverbs kernel with its ioctl()
// half (provider_uverbs_fake_ioctl.h): the ioctls they send, what they
// build from the answers, and that unimporting sends nothing.  The context
// is imported through the device op import_context on the fake's
// descriptor, as ibv_import_device() calls it once it has found the device
// (the test lists no devices, as ProviderContext::open() does not); what
// libibverbs adds after it (the context marked imported, its own async
// fd) the provider does not see.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "provider_uverbs_fake_ioctl.h"
#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

class ProviderImport : public ProviderContext {
protected:
	// A context on the fake's descriptor, which has a ucontext already.
	ContextPtr import_ctx(int *cmd_fd = nullptr)
	{
		const int fd = kernel_.open_cmd_fd();

		if (cmd_fd)
			*cmd_fd = fd;
		verbs_context *vctx = ops_->import_context(&dev_->device, fd);
		return ContextPtr(vctx ? &vctx->context : nullptr);
	}

	// The only call of a method; a failure if there is not exactly one.
	const Ioctl &only(uint16_t object_id, uint16_t method_id)
	{
		const auto calls = ioctl_.calls(object_id, method_id);

		EXPECT_EQ(calls.size(), 1u)
			<< "calls of method " << method_id << " of object "
			<< object_id;
		static const Ioctl none{};
		return calls.empty() ? none : *calls.back();
	}

	// An out attribute for the kernel to fill: len bytes.  libibverbs
	// and the provider send every attribute mandatory.
	static void expect_out(const Ioctl &c, uint16_t attr_id, uint16_t len)
	{
		const ib_uverbs_attr *a = c.attr(attr_id);

		ASSERT_NE(a, nullptr) << "attribute " << attr_id;
		EXPECT_EQ(a->len, len) << "attribute " << attr_id;
		EXPECT_TRUE(a->flags & UVERBS_ATTR_F_MANDATORY)
			<< "attribute " << attr_id;
		EXPECT_NE(a->data, 0u) << "attribute " << attr_id;
	}

	// A handle attribute: the handle in data, no length, mandatory.
	static void expect_handle(const Ioctl &c, uint16_t attr_id,
				  uint32_t handle)
	{
		const ib_uverbs_attr *a = c.attr(attr_id);

		ASSERT_NE(a, nullptr) << "attribute " << attr_id;
		EXPECT_EQ(a->data, handle);
		EXPECT_EQ(a->len, 0u);
		EXPECT_TRUE(a->flags & UVERBS_ATTR_F_MANDATORY);
	}

	FakeUverbsIoctl ioctl_{ kernel_ };
};

// QUERY_CONTEXT instead of GET_CONTEXT, with sroce's tail in a mandatory
// attribute; the context takes the kernel's max_inline_data, and
// libibverbs its num_comp_vectors and core_support.
TEST_F(ProviderImport, ContextAsksQueryContextAndTakesTheAnswer)
{
	int fd;

	kernel_.context_inline = 96;
	auto ctx = import_ctx(&fd);
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	EXPECT_EQ(ctx->cmd_fd, fd);
	EXPECT_EQ(ctx->device, &dev_->device);
	EXPECT_EQ(to_sroce_ctx(ctx.get())->max_inline_data, 96u);
	EXPECT_EQ(ctx->num_comp_vectors, 3);
	EXPECT_EQ(dev_->core_support, ioctl_.core_support);
	EXPECT_TRUE(kernel_.log.empty()) << "a write() command was sent";

	const Ioctl &c =
		only(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT);
	EXPECT_EQ(c.driver_id, uint32_t{ SROCE_DRIVER_ID });
	EXPECT_EQ(c.attrs.size(), 3u);
	expect_out(c, SROCE_ATTR_QUERY_CONTEXT_RESP,
		   sizeof(sroce_alloc_ucontext_resp));
	expect_out(c, UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
		   sizeof(int));
	expect_out(c, UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
		   sizeof(uint64_t));

	// The imported context works as an opened one (write() commands).
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);
	EXPECT_EQ(to_sroce_pd(pd.get())->pdn, FakeUverbs::kPdn);
}

TEST_F(ProviderImport, ContextRefusesAKernelSpeakingAnotherSroceAbi)
{
	int fd;

	kernel_.abi_version = SROCE_UVERBS_ABI_VERSION + 1;
	errno = 0;
	EXPECT_EQ(import_ctx(&fd), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_FALSE(fd_is_open(fd)) << "the provider owns cmd_fd";
}

// A file whose device went away answers every method with EIO: the import
// fails with it and the descriptor is closed.
TEST_F(ProviderImport, ContextOfAGoneDeviceFailsWithEio)
{
	int fd;

	ioctl_.fail_errno = EIO;
	errno = 0;
	EXPECT_EQ(import_ctx(&fd), nullptr);
	EXPECT_EQ(errno, EIO);
	EXPECT_FALSE(fd_is_open(fd));
}

// ibv_import_pd() asks SROCE_METHOD_PD_QUERY for the handle's pdn; the PD
// names the handle in later commands, and unimporting it sends nothing
// while deallocating it destroys the kernel's PD.
TEST_F(ProviderImport, PdCarriesTheHandleAndTheKernelsPdn)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	ibv_pd *pd = ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle);
	ASSERT_NE(pd, nullptr) << std::strerror(errno);
	EXPECT_EQ(pd->handle, FakeUverbs::kPdHandle);
	EXPECT_EQ(pd->context, ctx.get());
	EXPECT_EQ(to_sroce_pd(pd)->pdn, FakeUverbs::kPdn);
	EXPECT_TRUE(kernel_.log.empty());

	const Ioctl &c = only(UVERBS_OBJECT_PD, SROCE_METHOD_PD_QUERY);
	EXPECT_EQ(c.driver_id, uint32_t{ SROCE_DRIVER_ID });
	EXPECT_EQ(c.attrs.size(), 2u);
	expect_handle(c, SROCE_ATTR_QUERY_PD_HANDLE, FakeUverbs::kPdHandle);
	expect_out(c, SROCE_ATTR_QUERY_PD_RESP_PDN, sizeof(uint32_t));

	static unsigned char buf[64];
	MrPtr mr(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	EXPECT_EQ(kernel_.log.back().at<uint32_t>(
			  sizeof(ib_uverbs_cmd_hdr) +
			  offsetof(ib_uverbs_reg_mr, pd_handle)),
		  FakeUverbs::kPdHandle);
	mr.reset();

	const size_t n = kernel_.log.size();
	ibv_unimport_pd(pd);
	EXPECT_EQ(kernel_.log.size(), n) << "unimporting reached the kernel";

	pd = ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle);
	ASSERT_NE(pd, nullptr) << std::strerror(errno);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DEALLOC_PD);
	EXPECT_EQ(kernel_.log.back().at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kPdHandle);
}

// A parent domain of an imported PD holds it like any PD's; unimporting
// the parent domain lets go of it as ibv_dealloc_pd() would.
TEST_F(ProviderImport, UnimportingAParentDomainLetsGoOfItsPd)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	PdPtr pd(ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);
	ibv_parent_domain_init_attr a{};
	a.pd = pd.get();
	ibv_pd *pdom = ibv_alloc_parent_domain(ctx.get(), &a);
	ASSERT_NE(pdom, nullptr) << std::strerror(errno);
	EXPECT_EQ(pdom->handle, FakeUverbs::kPdHandle);
	EXPECT_EQ(ibv_dealloc_pd(pd.get()), EBUSY);

	const size_t n = kernel_.log.size();
	ibv_unimport_pd(pdom);
	EXPECT_EQ(kernel_.log.size(), n);
	EXPECT_EQ(ibv_dealloc_pd(pd.release()), 0);
}

// An unknown handle and one of another type fail with the kernel's errno,
// and no PD is made.
TEST_F(ProviderImport, PdOfABadHandleFailsWithTheKernelsErrno)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);

	errno = 0;
	EXPECT_EQ(ibv_import_pd(ctx.get(), 0x999), nullptr);
	EXPECT_EQ(errno, ENOENT);
	errno = 0;
	EXPECT_EQ(ibv_import_pd(ctx.get(), FakeUverbs::kMrHandle), nullptr);
	EXPECT_EQ(errno, EINVAL);
	ioctl_.fail_errno = EIO;
	errno = 0;
	EXPECT_EQ(ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle), nullptr);
	EXPECT_EQ(errno, EIO);
	EXPECT_EQ(ioctl_.calls(UVERBS_OBJECT_PD, SROCE_METHOD_PD_QUERY).size(),
		  3u);
	EXPECT_TRUE(kernel_.log.empty());
}

// ibv_import_mr() asks ib_core's QUERY_MR: keys and length from the
// kernel, addr NULL; unimporting sends nothing, deregistering destroys the
// kernel's MR.
TEST_F(ProviderImport, MrTakesKeysAndLengthFromQueryMr)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	PdPtr pd(ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);

	ibv_mr *mr = ibv_import_mr(pd.get(), FakeUverbs::kMrHandle);
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	EXPECT_EQ(mr->handle, FakeUverbs::kMrHandle);
	EXPECT_EQ(mr->lkey, ioctl_.mr_lkey);
	EXPECT_EQ(mr->rkey, ioctl_.mr_rkey);
	EXPECT_EQ(mr->length, ioctl_.mr_length);
	EXPECT_EQ(mr->addr, nullptr) << "ibv_import_mr(3)";
	EXPECT_EQ(mr->pd, pd.get());
	EXPECT_EQ(mr->context, ctx.get());
	EXPECT_TRUE(kernel_.log.empty());

	const Ioctl &c = only(UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR);
	EXPECT_EQ(c.driver_id, uint32_t{ SROCE_DRIVER_ID });
	EXPECT_EQ(c.attrs.size(), 4u);
	expect_handle(c, UVERBS_ATTR_QUERY_MR_HANDLE, FakeUverbs::kMrHandle);
	expect_out(c, UVERBS_ATTR_QUERY_MR_RESP_LKEY, sizeof(uint32_t));
	expect_out(c, UVERBS_ATTR_QUERY_MR_RESP_RKEY, sizeof(uint32_t));
	expect_out(c, UVERBS_ATTR_QUERY_MR_RESP_LENGTH, sizeof(size_t));

	ibv_unimport_mr(mr);
	EXPECT_TRUE(kernel_.log.empty()) << "unimporting reached the kernel";

	mr = ibv_import_mr(pd.get(), FakeUverbs::kMrHandle);
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	ASSERT_EQ(commands(IB_USER_VERBS_CMD_DEREG_MR), 1u);
	EXPECT_EQ(kernel_.log.back().at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kMrHandle);
}

TEST_F(ProviderImport, MrOfABadHandleFailsWithTheKernelsErrno)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	PdPtr pd(ibv_import_pd(ctx.get(), FakeUverbs::kPdHandle));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);

	errno = 0;
	EXPECT_EQ(ibv_import_mr(pd.get(), 0x999), nullptr);
	EXPECT_EQ(errno, ENOENT);
	errno = 0;
	EXPECT_EQ(ibv_import_mr(pd.get(), FakeUverbs::kPdHandle), nullptr);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(kernel_.log.empty());
}

// The rest of the ioctls stay write() commands: a method the fake kernel
// lacks fails with EPROTONOSUPPORT and libibverbs falls back, as for a
// kernel without that method.
TEST_F(ProviderImport, OtherCommandsFallBackToWrite)
{
	auto ctx = import_ctx();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);
	EXPECT_EQ(
		ioctl_.calls(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE).size(),
		1u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_CREATE_CQ), 1u);
}

} // namespace
