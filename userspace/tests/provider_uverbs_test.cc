// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The provider against the real libibverbs 44 and a fake uverbs kernel.
//
// There is no sroce device on a build host, so this test stands in for both
// ends libibverbs normally connects the provider to:
//
//  - It defines verbs_register_driver_34 itself.  The executable is linked
//    with exported symbols, and the dynamic linker resolves the provider's
//    versioned reference (verbs_register_driver_34@IBVERBS_PRIVATE_34) to
//    this unversioned definition before libibverbs' own, so the test sees
//    exactly what the provider's constructor registers.
//
//  - It defines write(), so that libibverbs' commands on one designated file
//    descriptor reach FakeUverbs instead of a kernel.  That descriptor is
//    /dev/null, whose ioctl() fails with ENOTTY, which makes libibverbs use
//    the legacy write() encoding for every command: the same request and
//    response buffers, split at the same places, that the ioctl encoding
//    carries as attributes.  All other descriptors go to the real write().
//
// Driving the provider through libibverbs' public entry points
// (ibv_alloc_pd() ...) also proves that its ops sit in the slots libibverbs
// dispatches from, i.e. the verbs_context_ops layout.

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/sroce-abi.h>

// The provider's private view; its reply unions (abi.h) are deliberately not
// used, so that the sizes below are computed independently of them.
extern "C" {
#include "sroce.h"
}

#ifndef SROCE_PROVIDER_PATH
#error "SROCE_PROVIDER_PATH must name the built libsroce-rdmav34.so"
#endif

namespace {

std::vector<const verbs_device_ops *> registered;

class FakeUverbs;
FakeUverbs *active_fake;

} // namespace

extern "C" void verbs_register_driver_34(const verbs_device_ops *ops)
{
	registered.push_back(ops);
}

extern "C" ssize_t write(int fd, const void *buf, size_t len);

namespace {

using RealWrite = ssize_t (*)(int, const void *, size_t);

RealWrite real_write()
{
	static const auto fn =
		reinterpret_cast<RealWrite>(dlsym(RTLD_NEXT, "write"));
	return fn;
}

// One command as the fake kernel received it.
struct Command {
	uint32_t command;
	uint16_t in_words;
	uint16_t out_words;
	std::vector<unsigned char> bytes;	// header included

	// The value at byte off, or zero if the command is too short.
	template <typename T> T at(size_t off) const
	{
		T v{};
		if (off <= bytes.size() && bytes.size() - off >= sizeof(v))
			std::memcpy(&v, bytes.data() + off, sizeof(v));
		return v;
	}
};

// The kernel side of the uverbs write() ABI for the commands sroce uses.
class FakeUverbs {
public:
	static constexpr uint32_t kAsyncFdUnused = ~0u;
	static constexpr uint32_t kPdHandle = 0x11;
	static constexpr uint32_t kPdn = 0x5a5a;
	static constexpr uint64_t kFwVer = (1ull << 32) | (2u << 16) | 3u;

	// What the kernel puts in the GET_CONTEXT driver tail.
	uint32_t abi_version = SROCE_UVERBS_ABI_VERSION;
	bool send_context_tail = true;
	// A command to fail, and the errno the kernel fails it with.
	uint32_t fail_command = ~0u;
	int fail_errno = 0;

	std::vector<Command> log;

	FakeUverbs() { active_fake = this; }
	~FakeUverbs() { active_fake = nullptr; }
	FakeUverbs(const FakeUverbs &) = delete;
	FakeUverbs &operator=(const FakeUverbs &) = delete;

	// A descriptor standing for /dev/infiniband/uverbsN; whoever receives
	// it (alloc_context) owns it.
	int open_cmd_fd()
	{
		fd_ = open("/dev/null", O_RDWR | O_CLOEXEC);
		return fd_;
	}

	bool owns(int fd) const { return fd >= 0 && fd == fd_; }

	ssize_t handle(const void *buf, size_t len)
	{
		Command c{};
		c.bytes.assign(static_cast<const unsigned char *>(buf),
			       static_cast<const unsigned char *>(buf) + len);
		if (len < sizeof(ib_uverbs_cmd_hdr))
			return fail(EINVAL);
		const auto hdr = c.at<ib_uverbs_cmd_hdr>(0);
		c.command = hdr.command;
		c.in_words = hdr.in_words;
		c.out_words = hdr.out_words;
		log.push_back(c);

		// The uverbs core's own check of legacy commands.
		if (!(hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED) &&
		    hdr.in_words * 4u != len)
			return fail(EINVAL);
		if (hdr.command == fail_command)
			return fail(fail_errno);
		if (!reply(c))
			return fail(ENOSYS);
		return static_cast<ssize_t>(len);
	}

private:
	static ssize_t fail(int err)
	{
		errno = err;
		return -1;
	}

	// The response pointer of a legacy (non-extended) command.
	static void *response_of(const Command &c)
	{
		return reinterpret_cast<void *>(
			static_cast<uintptr_t>(c.at<uint64_t>(8)));
	}

	// Copies at most the caller's buffer, like the kernel's udata copy.
	static void put(void *dst, size_t room, const void *src, size_t len)
	{
		std::memcpy(dst, src, std::min(room, len));
	}

	bool reply(const Command &c)
	{
		switch (c.command) {
		case IB_USER_VERBS_CMD_GET_CONTEXT:
			reply_get_context(c);
			return true;
		case IB_USER_VERBS_CMD_QUERY_DEVICE:
			reply_query_device(c);
			return true;
		case IB_USER_VERBS_CMD_FLAG_EXTENDED |
			IB_USER_VERBS_EX_CMD_QUERY_DEVICE:
			reply_query_device_ex(c);
			return true;
		case IB_USER_VERBS_CMD_QUERY_PORT:
			reply_query_port(c);
			return true;
		case IB_USER_VERBS_CMD_ALLOC_PD:
			reply_alloc_pd(c);
			return true;
		case IB_USER_VERBS_CMD_DEALLOC_PD:
			return true;
		default:
			return false;
		}
	}

	void reply_get_context(const Command &c)
	{
		auto *out = static_cast<unsigned char *>(response_of(c));
		const size_t room = c.out_words * 4u;
		ib_uverbs_get_context_resp core{};
		sroce_alloc_ucontext_resp drv{};

		core.async_fd = kAsyncFdUnused;
		core.num_comp_vectors = 1;
		put(out, room, &core, sizeof(core));
		if (!send_context_tail || room <= sizeof(core))
			return;
		drv.abi_version = abi_version;
		drv.max_inline_data = 64;
		put(out + sizeof(core), room - sizeof(core), &drv, sizeof(drv));
	}

	static ib_uverbs_query_device_resp device_attrs()
	{
		ib_uverbs_query_device_resp base{};

		base.fw_ver = kFwVer;
		base.vendor_id = SROCE_VENDOR_ID;
		base.vendor_part_id = SROCE_VENDOR_PART_ID;
		base.max_pd = 16;
		base.phys_port_cnt = 1;
		return base;
	}

	void reply_query_device(const Command &c)
	{
		const auto base = device_attrs();

		put(response_of(c), c.out_words * 4u, &base, sizeof(base));
	}

	void reply_query_device_ex(const Command &c)
	{
		const auto ex = c.at<ib_uverbs_ex_cmd_hdr>(
			sizeof(ib_uverbs_cmd_hdr));
		const size_t room =
			(c.out_words + ex.provider_out_words) * 8u;
		ib_uverbs_ex_query_device_resp resp{};

		resp.base = device_attrs();
		resp.response_length = static_cast<uint32_t>(
			std::min(room, sizeof(resp)));
		put(reinterpret_cast<void *>(
			    static_cast<uintptr_t>(ex.response)),
		    room, &resp, sizeof(resp));
	}

	void reply_query_port(const Command &c)
	{
		ib_uverbs_query_port_resp resp{};

		resp.state = IBV_PORT_ACTIVE;
		resp.active_mtu = IBV_MTU_1024;
		resp.max_mtu = IBV_MTU_4096;
		resp.gid_tbl_len = 16;
		resp.link_layer = IBV_LINK_LAYER_ETHERNET;
		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
	}

	void reply_alloc_pd(const Command &c)
	{
		auto *out = static_cast<unsigned char *>(response_of(c));
		const size_t room = c.out_words * 4u;
		ib_uverbs_alloc_pd_resp core{};
		sroce_alloc_pd_resp drv{};

		core.pd_handle = kPdHandle;
		drv.pdn = kPdn;
		put(out, room, &core, sizeof(core));
		if (room > sizeof(core))
			put(out + sizeof(core), room - sizeof(core), &drv,
			    sizeof(drv));
	}

	int fd_ = -1;
};

} // namespace

extern "C" ssize_t write(int fd, const void *buf, size_t len)
{
	if (active_fake && active_fake->owns(fd))
		return active_fake->handle(buf, len);
	return real_write()(fd, buf, len);
}

namespace {

// Loads the provider once per process and, like libibverbs, never unloads
// it: its registered ops must stay mapped.
const verbs_device_ops *provider_ops()
{
	static void *const handle = dlopen(SROCE_PROVIDER_PATH, RTLD_NOW);

	if (!handle || registered.empty())
		return nullptr;
	return registered.front();
}

bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

// Drops the reference libibverbs' device list would hold.
struct DeviceRelease {
	void operator()(verbs_device *dev) const
	{
		dev->ops->uninit_device(dev);
	}
};
using DevicePtr = std::unique_ptr<verbs_device, DeviceRelease>;

struct ContextClose {
	void operator()(ibv_context *ctx) const { ibv_close_device(ctx); }
};
using ContextPtr = std::unique_ptr<ibv_context, ContextClose>;

struct PdDealloc {
	void operator()(ibv_pd *pd) const { ibv_dealloc_pd(pd); }
};
using PdPtr = std::unique_ptr<ibv_pd, PdDealloc>;

TEST(ProviderRegistration, RegistersOnceAsSroce)
{
	ASSERT_NE(provider_ops(), nullptr) << dlerror();
	ASSERT_EQ(registered.size(), 1u);
	EXPECT_STREQ(provider_ops()->name, "sroce");
}

TEST(ProviderRegistration, MatchesOnlyTheSroceDriverId)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);
	const verbs_match_ent *table = ops->match_table;
	ASSERT_NE(table, nullptr);

	EXPECT_EQ(table[0].kind, VERBS_MATCH_DRIVER_ID);
	EXPECT_EQ(table[0].u.driver_id, uint64_t{ SROCE_DRIVER_ID });
	EXPECT_EQ(table[1].kind, VERBS_MATCH_SENTINEL);
	// No name, modalias or custom matching that could claim other devices.
	EXPECT_EQ(ops->match_device, nullptr);
}

TEST(ProviderRegistration, AcceptsTheSroceUverbsAbi)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);

	EXPECT_LE(ops->match_min_abi_version, SROCE_UVERBS_ABI_VERSION);
	EXPECT_GE(ops->match_max_abi_version, SROCE_UVERBS_ABI_VERSION);
}

TEST(ProviderRegistration, ProvidesDeviceAndContextConstructors)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);

	EXPECT_NE(ops->alloc_device, nullptr);
	EXPECT_NE(ops->uninit_device, nullptr);
	EXPECT_NE(ops->alloc_context, nullptr);
	EXPECT_EQ(ops->static_providers, nullptr);
}

// A device as libibverbs' try_driver() leaves it, plus the fake kernel.
class ProviderContext : public ::testing::Test {
protected:
	void SetUp() override
	{
		ops_ = provider_ops();
		ASSERT_NE(ops_, nullptr);
		dev_.reset(ops_->alloc_device(nullptr));
		ASSERT_NE(dev_, nullptr);
		dev_->ops = ops_;
		dev_->refcount = 1;
		dev_->sysfs =
			reinterpret_cast<verbs_sysfs_dev *>(sysfs_record_);
		std::strncpy(dev_->device.name, "sroce0",
			     sizeof(dev_->device.name) - 1);
	}

	// ibv_open_device() without the sysfs lookup: hand the provider a
	// command descriptor and take the context it builds.
	ContextPtr open(int *cmd_fd = nullptr)
	{
		const int fd = kernel_.open_cmd_fd();

		if (cmd_fd)
			*cmd_fd = fd;
		verbs_context *vctx =
			ops_->alloc_context(&dev_->device, fd, nullptr);
		return ContextPtr(vctx ? &vctx->context : nullptr);
	}

	const verbs_device_ops *ops_ = nullptr;
	FakeUverbs kernel_;
	// libibverbs' record of the device, opaque to the provider.  Its
	// command helpers read it (ibv_cmd_query_device_any() looks at
	// num_ports, at byte 964 of the 992-byte v44 struct); all zero means
	// "nothing known", which every reader handles.
	alignas(8) unsigned char sysfs_record_[1024] = {};
	DevicePtr dev_;
};

TEST_F(ProviderContext, GetContextCarriesTheSroceResponseTail)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	ASSERT_EQ(kernel_.log.size(), 1u);
	const Command &c = kernel_.log[0];

	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_GET_CONTEXT);
	// header + response pointer, no driver request data
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_get_context));
	// core response followed by struct sroce_alloc_ucontext_resp
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_get_context_resp) +
					    sizeof(sroce_alloc_ucontext_resp));
	EXPECT_EQ(ctx->num_comp_vectors, 1);
	EXPECT_EQ(ctx->device, &dev_->device);
	EXPECT_EQ(to_sroce_ctx(ctx.get())->max_inline_data, 64u);
}

TEST_F(ProviderContext, RefusesAKernelSpeakingAnotherSroceAbi)
{
	int fd;

	kernel_.abi_version = SROCE_UVERBS_ABI_VERSION + 1;
	errno = 0;
	EXPECT_EQ(open(&fd), nullptr);
	EXPECT_EQ(errno, EPROTO);
	// alloc_context owns the descriptor even when it fails.
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, RefusesAKernelWithoutDriverData)
{
	kernel_.send_context_tail = false;
	errno = 0;
	EXPECT_EQ(open(), nullptr);
	EXPECT_EQ(errno, EPROTO);
}

TEST_F(ProviderContext, ReportsTheKernelsGetContextError)
{
	int fd;

	kernel_.fail_command = IB_USER_VERBS_CMD_GET_CONTEXT;
	kernel_.fail_errno = EINVAL;
	errno = 0;
	EXPECT_EQ(open(&fd), nullptr);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, CloseReleasesTheCommandDescriptor)
{
	int fd;
	auto ctx = open(&fd);
	ASSERT_NE(ctx, nullptr);

	EXPECT_TRUE(fd_is_open(fd));
	ctx.reset();
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, QueryDeviceFormatsTheFirmwareVersion)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_device_attr attr{};

	ASSERT_EQ(ibv_query_device(ctx.get(), &attr), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_QUERY_DEVICE);
	EXPECT_STREQ(attr.fw_ver, "1.2.3");
	EXPECT_EQ(attr.vendor_id, uint32_t{ SROCE_VENDOR_ID });
	EXPECT_EQ(attr.vendor_part_id, uint32_t{ SROCE_VENDOR_PART_ID });
	EXPECT_EQ(attr.phys_port_cnt, 1);
}

TEST_F(ProviderContext, QueryDeviceExUsesTheExtendedCommand)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_device_attr_ex attr{};

	ASSERT_EQ(ibv_query_device_ex(ctx.get(), nullptr, &attr), 0);
	EXPECT_EQ(kernel_.log.back().command,
		  IB_USER_VERBS_CMD_FLAG_EXTENDED |
			  IB_USER_VERBS_EX_CMD_QUERY_DEVICE);
	EXPECT_STREQ(attr.orig_attr.fw_ver, "1.2.3");
	EXPECT_EQ(attr.orig_attr.max_pd, 16);
}

TEST_F(ProviderContext, QueryPortSendsThePortNumber)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_port_attr attr{};

	ASSERT_EQ(ibv_query_port(ctx.get(), 1, &attr), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_QUERY_PORT);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_query_port));
	EXPECT_EQ(c.at<uint8_t>(offsetof(verbs_cmd_query_port, port_num)),
		  1);
	EXPECT_EQ(attr.state, IBV_PORT_ACTIVE);
	EXPECT_EQ(attr.active_mtu, IBV_MTU_1024);
	EXPECT_EQ(attr.link_layer, IBV_LINK_LAYER_ETHERNET);
}

TEST_F(ProviderContext, AllocPdKeepsTheKernelsPdNumber)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_ALLOC_PD);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_alloc_pd));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_alloc_pd_resp) +
					    sizeof(sroce_alloc_pd_resp));
	EXPECT_EQ(pd->handle, FakeUverbs::kPdHandle);
	EXPECT_EQ(pd->context, ctx.get());
	EXPECT_EQ(to_sroce_pd(pd.get())->pdn, FakeUverbs::kPdn);
}

TEST_F(ProviderContext, DeallocPdNamesTheKernelHandle)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);

	ASSERT_EQ(ibv_dealloc_pd(pd.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DEALLOC_PD);
	EXPECT_EQ(c.in_words * 4u, sizeof(ib_uverbs_cmd_hdr) +
					   sizeof(ib_uverbs_dealloc_pd));
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kPdHandle);
}

TEST_F(ProviderContext, AllocPdReportsTheKernelsError)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	kernel_.fail_command = IB_USER_VERBS_CMD_ALLOC_PD;
	kernel_.fail_errno = ENOMEM;
	errno = 0;
	EXPECT_EQ(PdPtr(ibv_alloc_pd(ctx.get())), nullptr);
	EXPECT_EQ(errno, ENOMEM);
}

TEST_F(ProviderContext, VerbsNotYetImplementedAreNotSupported)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	errno = 0;
	EXPECT_EQ(ibv_create_cq(ctx.get(), 16, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	// Nothing reached the kernel: the default op answered.
	EXPECT_EQ(kernel_.log.size(), 1u);
}

} // namespace
