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
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
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
	static constexpr uint32_t kMrHandle = 0x22;
	static constexpr uint32_t kMrKey = 0x8badf00d;
	static constexpr uint64_t kFwVer = (1ull << 32) | (2u << 16) | 3u;

	// What the kernel puts in the GET_CONTEXT driver tail.
	uint32_t abi_version = SROCE_UVERBS_ABI_VERSION;
	bool send_context_tail = true;
	// A command to fail, and the errno the kernel fails it with.
	uint32_t fail_command = ~0u;
	int fail_errno = 0;

	// The CQ ring that CREATE_CQ hands out and mmap() of kCqKey maps.
	static constexpr uint32_t kCqHandle = 0x33;
	static constexpr uint32_t kCqn = 7;
	static constexpr uint64_t kCqKey = 0x5000;
	uint32_t cq_slots = 8;		// the capacity the kernel reports
	uint32_t cq_header_slots = 0;	// if set, what the ring header claims
	uint32_t cq_start = 0;		// initial producer and consumer
	int mmap_errno = 0;		// fail the ring's mmap() with this
	std::unique_ptr<void, decltype(&std::free)> ring_mem{ nullptr,
							      &std::free };
	size_t ring_len = 0;
	std::vector<void *> unmapped;

	sroce_ring_hdr *ring() const
	{
		return static_cast<sroce_ring_hdr *>(ring_mem.get());
	}

	sroce_cqe *cqe_slot(uint32_t idx) const
	{
		return reinterpret_cast<sroce_cqe *>(
			static_cast<char *>(ring_mem.get()) +
			SROCE_RING_SLOTS_OFFSET +
			(idx & (cq_slots - 1)) * sizeof(sroce_cqe));
	}

	// The kernel's side of mmap() on the command descriptor.
	void *map(size_t len, int prot, int flags, off_t off)
	{
		if (mmap_errno)
			return fail_map(mmap_errno);
		if (!ring_mem || static_cast<uint64_t>(off) != kCqKey ||
		    len != ring_len || !(flags & MAP_SHARED) ||
		    prot != (PROT_READ | PROT_WRITE))
			return fail_map(EINVAL);
		return ring_mem.get();
	}

	bool owns_mapping(void *addr) const
	{
		return addr && addr == ring_mem.get();
	}

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
		case IB_USER_VERBS_CMD_CREATE_CQ:
			reply_create_cq(c);
			return true;
		case IB_USER_VERBS_CMD_DESTROY_CQ:
			reply_destroy_cq(c);
			return true;
		case IB_USER_VERBS_CMD_REG_MR:
			reply_reg_mr(c);
			return true;
		case IB_USER_VERBS_CMD_DEREG_MR:
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

	void reply_reg_mr(const Command &c)
	{
		ib_uverbs_reg_mr_resp resp{};

		resp.mr_handle = kMrHandle;
		resp.lkey = kMrKey;
		resp.rkey = kMrKey;
		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
	}

	static void *fail_map(int err)
	{
		errno = err;
		return MAP_FAILED;
	}

	// A zeroed ring as vmalloc_user() leaves it, header filled in.
	void reply_create_cq(const Command &c)
	{
		ib_uverbs_create_cq_resp core{};
		sroce_create_cq_resp drv{};
		auto *out = static_cast<unsigned char *>(response_of(c));
		const size_t room = c.out_words * 4u;

		ring_len = SROCE_RING_SLOTS_OFFSET + cq_slots * sizeof(sroce_cqe);
		ring_len = (ring_len + 4095) & ~size_t{ 4095 };
		ring_mem.reset(std::aligned_alloc(4096, ring_len));
		std::memset(ring_mem.get(), 0, ring_len);
		ring()->num_slots = cq_header_slots ? cq_header_slots : cq_slots;
		ring()->slot_shift = 6;
		ring()->producer = cq_start;
		ring()->consumer = cq_start;

		core.cq_handle = kCqHandle;
		core.cqe = cq_slots;
		drv.mmap_key = kCqKey;
		drv.mmap_len = static_cast<uint32_t>(ring_len);
		drv.cqn = kCqn;
		put(out, room, &core, sizeof(core));
		if (room > sizeof(core))
			put(out + sizeof(core), room - sizeof(core), &drv,
			    sizeof(drv));
	}

	void reply_destroy_cq(const Command &c)
	{
		ib_uverbs_destroy_cq_resp resp{};

		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
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

// mmap() and munmap() of the fake's ring go to the fake kernel too; all
// other calls (none in libibverbs' and the provider's paths but ours) to
// libc.
extern "C" void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	using RealMmap = void *(*)(void *, size_t, int, int, int, off_t);
	static const auto real = reinterpret_cast<RealMmap>(
		dlsym(RTLD_NEXT, "mmap"));

	if (active_fake && active_fake->owns(fd))
		return active_fake->map(len, prot, flags, off);
	return real(addr, len, prot, flags, fd, off);
}

extern "C" int munmap(void *addr, size_t len)
{
	using RealMunmap = int (*)(void *, size_t);
	static const auto real = reinterpret_cast<RealMunmap>(
		dlsym(RTLD_NEXT, "munmap"));

	if (active_fake && active_fake->owns_mapping(addr)) {
		active_fake->unmapped.push_back(addr);
		return 0;
	}
	return real(addr, len);
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

struct MrDereg {
	void operator()(ibv_mr *mr) const { ibv_dereg_mr(mr); }
};
using MrPtr = std::unique_ptr<ibv_mr, MrDereg>;

struct CqDestroy {
	void operator()(ibv_cq *cq) const { ibv_destroy_cq(cq); }
};
using CqPtr = std::unique_ptr<ibv_cq, CqDestroy>;

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

TEST_F(ProviderContext, RegMrSendsTheRangeAndReturnsTheKernelsKeys)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[8192];
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

	MrPtr mr(ibv_reg_mr(pd.get(), buf + 1, 100, access));
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_REG_MR);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_reg_mr));
	// No sroce driver data: the core response only.
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_reg_mr_resp));
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, start)),
		  reinterpret_cast<uintptr_t>(buf + 1));
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, length)), 100u);
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, hca_va)),
		  reinterpret_cast<uintptr_t>(buf + 1));
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_reg_mr, pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_reg_mr, access_flags)),
		  uint32_t(access));

	EXPECT_EQ(mr->handle, FakeUverbs::kMrHandle);
	EXPECT_EQ(mr->lkey, FakeUverbs::kMrKey);
	EXPECT_EQ(mr->rkey, FakeUverbs::kMrKey);
	EXPECT_EQ(mr->context, ctx.get());
	EXPECT_EQ(mr->pd, pd.get());
	EXPECT_EQ(mr->addr, buf + 1);
	EXPECT_EQ(mr->length, 100u);
	// What ibv_dereg_mr() will read back through the wrapper.
	const auto *vmr = &to_sroce_mr(mr.get())->base_mr;
	EXPECT_EQ(vmr->mr_type, IBV_MR_TYPE_MR);
	EXPECT_EQ(vmr->access, access);
}

TEST_F(ProviderContext, DeregMrNamesTheKernelHandle)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[64];
	MrPtr mr(ibv_reg_mr(pd.get(), buf, sizeof(buf), 0));
	ASSERT_NE(mr, nullptr);

	ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DEREG_MR);
	EXPECT_EQ(c.in_words * 4u, sizeof(ib_uverbs_cmd_hdr) +
					   sizeof(ib_uverbs_dereg_mr));
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kMrHandle);
}

TEST_F(ProviderContext, RegMrReportsTheKernelsError)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[64];

	kernel_.fail_command = IB_USER_VERBS_CMD_REG_MR;
	kernel_.fail_errno = EINVAL;
	errno = 0;
	EXPECT_EQ(MrPtr(ibv_reg_mr(pd.get(), buf, sizeof(buf),
				   IBV_ACCESS_REMOTE_WRITE)),
		  nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(ProviderContext, VerbsNotYetImplementedAreNotSupported)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	// Only the context matters to libibverbs' dispatch.
	ibv_pd pd{};
	pd.context = ctx.get();
	ibv_srq_init_attr attr{};
	errno = 0;
	EXPECT_EQ(ibv_create_srq(&pd, &attr), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	// Nothing reached the kernel: the default op answered.
	EXPECT_EQ(kernel_.log.size(), 1u);
}

TEST_F(ProviderContext, CreateCqMapsTheRingTheKernelNames)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	CqPtr cq(ibv_create_cq(ctx.get(), 5, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_CQ);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_create_cq));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_create_cq_resp) +
					    sizeof(sroce_create_cq_resp));
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_create_cq, cqe)), 5u);
	EXPECT_EQ(c.at<int32_t>(offsetof(verbs_cmd_create_cq, comp_channel)),
		  -1);
	EXPECT_EQ(cq->handle, FakeUverbs::kCqHandle);
	EXPECT_EQ(cq->cqe, 8);
	auto *scq = to_sroce_cq(cq.get());
	EXPECT_EQ(static_cast<void *>(scq->ring), kernel_.ring_mem.get());
	EXPECT_EQ(scq->cqn, FakeUverbs::kCqn);

	ibv_wc wc[2];
	EXPECT_EQ(ibv_poll_cq(cq.get(), 2, wc), 0);
}

TEST_F(ProviderContext, PollCqCopiesCqesAcrossTheCounterWrap)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.cq_start = 0xfffffffe;
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	// The kernel posts four CQEs, the counter wrapping after two.
	for (uint32_t i = 0; i < 4; i++) {
		sroce_cqe *e = kernel_.cqe_slot(kernel_.cq_start + i);
		e->wr_id = 100 + i;
		e->status = i == 3 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
		e->opcode = IBV_WC_RECV;
		e->byte_len = 10 * i;
		e->ex = 0x01020304;
		e->qp_num = 0x11;
		e->src_qp = 0x22;
		e->wc_flags = IBV_WC_WITH_IMM;
		e->pkey_index = 0;
		e->slid = 0;
		e->sl = 3;
	}
	kernel_.ring()->producer = kernel_.cq_start + 4;

	ibv_wc wc[8] = {};
	ASSERT_EQ(ibv_poll_cq(cq.get(), 3, wc), 3);
	EXPECT_EQ(kernel_.ring()->consumer, kernel_.cq_start + 3);
	ASSERT_EQ(ibv_poll_cq(cq.get(), 8, wc + 3), 1);
	EXPECT_EQ(kernel_.ring()->consumer, 2u);
	EXPECT_EQ(ibv_poll_cq(cq.get(), 8, wc + 4), 0);
	for (uint32_t i = 0; i < 4; i++) {
		EXPECT_EQ(wc[i].wr_id, 100u + i);
		EXPECT_EQ(wc[i].opcode, IBV_WC_RECV);
		EXPECT_EQ(wc[i].byte_len, 10 * i);
		EXPECT_EQ(wc[i].imm_data, 0x01020304u);
		EXPECT_EQ(wc[i].qp_num, 0x11u);
		EXPECT_EQ(wc[i].src_qp, 0x22u);
		EXPECT_EQ(wc[i].wc_flags, unsigned{ IBV_WC_WITH_IMM });
		EXPECT_EQ(wc[i].sl, 3);
	}
	EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc[3].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(ProviderContext, PollCqIgnoresAProducerBeyondTheRing)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	kernel_.ring()->producer = 9;	// more than 8 slots ahead
	ibv_wc wc[16];
	EXPECT_EQ(ibv_poll_cq(cq.get(), 16, wc), 0);
	EXPECT_EQ(kernel_.ring()->consumer, 0u);
}

TEST_F(ProviderContext, ReqNotifyCqArmsInSharedMemory)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);
	const size_t commands = kernel_.log.size();

	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 1), 0);
	EXPECT_EQ(kernel_.ring()->flags, uint32_t{ SROCE_CQ_ARM_SOLICITED });
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(kernel_.ring()->flags,
		  uint32_t{ SROCE_CQ_ARM_SOLICITED | SROCE_CQ_ARM_NEXT });
	EXPECT_EQ(kernel_.log.size(), commands);	// no system call
}

TEST_F(ProviderContext, DestroyCqDestroysThenUnmaps)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_cq *cq = ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0);
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	kernel_.fail_command = IB_USER_VERBS_CMD_DESTROY_CQ;
	kernel_.fail_errno = EBUSY;
	EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
	EXPECT_TRUE(kernel_.unmapped.empty());	// still usable

	kernel_.fail_command = ~0u;
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DESTROY_CQ);
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
				 offsetof(ib_uverbs_destroy_cq, cq_handle)),
		  FakeUverbs::kCqHandle);
	ASSERT_EQ(kernel_.unmapped.size(), 1u);
	EXPECT_EQ(kernel_.unmapped[0], kernel_.ring_mem.get());
}

TEST_F(ProviderContext, CreateCqUndoesTheKernelCqIfTheRingCannotBeMapped)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.mmap_errno = ENOMEM;

	errno = 0;
	EXPECT_EQ(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_CQ);
}

TEST_F(ProviderContext, CreateCqRefusesARingLargerThanItsMapping)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.cq_header_slots = 1024;

	errno = 0;
	EXPECT_EQ(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_CQ);
	EXPECT_EQ(kernel_.unmapped.size(), 1u);
}

} // namespace
