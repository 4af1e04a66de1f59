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
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
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

// A QP ring as the kernel's vmalloc_user() leaves it: zeroed, the header
// filled in, both counters at start.
struct FakeRing {
	std::unique_ptr<void, decltype(&std::free)> mem{ nullptr, &std::free };
	size_t len = 0;
	uint32_t slots = 0;

	void make(uint32_t num_slots, uint32_t shift, uint32_t start)
	{
		len = SROCE_RING_SLOTS_OFFSET + (size_t{ num_slots } << shift);
		len = (len + 4095) & ~size_t{ 4095 };
		mem.reset(std::aligned_alloc(4096, len));
		std::memset(mem.get(), 0, len);
		slots = num_slots;
		shift_ = shift;
		hdr()->num_slots = num_slots;
		hdr()->slot_shift = shift;
		hdr()->producer = start;
		hdr()->consumer = start;
	}

	sroce_ring_hdr *hdr() const
	{
		return static_cast<sroce_ring_hdr *>(mem.get());
	}

	const unsigned char *slot(uint32_t idx) const
	{
		return static_cast<const unsigned char *>(mem.get()) +
		       SROCE_RING_SLOTS_OFFSET +
		       (size_t{ idx & (slots - 1) } << shift_);
	}

	size_t slot_size() const { return size_t{ 1 } << shift_; }

private:
	uint32_t shift_ = 0;
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

	// The QP that CREATE_QP hands out and its rings.  The default slots
	// hold a 64-byte send header and 4 SGEs or 64 inline bytes, and a
	// 16-byte receive header and 3 SGEs.
	static constexpr uint32_t kQpHandle = 0x44;
	static constexpr uint32_t kQpn = 0x123;
	static constexpr uint64_t kSqKey = 0x6000;
	static constexpr uint64_t kRqKey = 0x7000;
	uint32_t sq_slots = 8;
	uint32_t sq_shift = 7;
	uint32_t rq_slots = 4;
	uint32_t rq_shift = 6;
	uint32_t qp_inline = 64;	// max_inline_data of the driver tail
	uint32_t qp_start = 0;		// initial producer and consumer
	// Like the kernel, a doorbell wakes the SQ worker, which clears
	// NEED_WAKEUP; the RQ flag stays set while the QP is in error.
	bool wake_clears_sq_flag = true;
	FakeRing sq, rq;
	// The producer each doorbell found in the ring, one entry per doorbell.
	std::vector<uint32_t> sq_doorbells, rq_doorbells;

	// The SRQ that CREATE_SRQ hands out: slots of a 16-byte receive
	// header and 3 SGEs.  QUERY_SRQ answers srq_query.
	static constexpr uint32_t kSrqHandle = 0x55;
	static constexpr uint32_t kSrqn = 9;
	static constexpr uint64_t kSrqKey = 0x8000;
	uint32_t srq_slots = 4;
	uint32_t srq_shift = 6;
	ib_uverbs_query_srq_resp srq_query{ 4, 3, 2, 0 };
	FakeRing srq;

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
		const auto key = static_cast<uint64_t>(off);

		if (mmap_errno)
			return fail_map(mmap_errno);
		if (!(flags & MAP_SHARED) || prot != (PROT_READ | PROT_WRITE))
			return fail_map(EINVAL);
		if (key == kCqKey && ring_mem && len == ring_len)
			return ring_mem.get();
		if (key == kSqKey && sq.mem && len == sq.len)
			return sq.mem.get();
		if (key == kRqKey && rq.mem && len == rq.len)
			return rq.mem.get();
		if (key == kSrqKey && srq.mem && len == srq.len)
			return srq.mem.get();
		return fail_map(EINVAL);
	}

	bool owns_mapping(void *addr) const
	{
		return addr &&
		       (addr == ring_mem.get() || addr == sq.mem.get() ||
			addr == rq.mem.get() || addr == srq.mem.get());
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
		if (const int err = refuse(c))
			return fail(err);
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
		case IB_USER_VERBS_CMD_CREATE_QP:
			reply_create_qp(c);
			return true;
		case IB_USER_VERBS_CMD_MODIFY_QP:
			return true;
		case IB_USER_VERBS_CMD_DESTROY_QP:
			reply_destroy_qp(c);
			return true;
		case IB_USER_VERBS_CMD_POST_SEND:
			sq_doorbells.push_back(sq.hdr()->producer);
			if (wake_clears_sq_flag)
				sq.hdr()->flags &=
					~uint32_t{ SROCE_SQ_NEED_WAKEUP };
			reply_post(c);
			return true;
		case IB_USER_VERBS_CMD_POST_RECV:
			rq_doorbells.push_back(rq.hdr()->producer);
			reply_post(c);
			return true;
		case IB_USER_VERBS_CMD_CREATE_SRQ:
			reply_create_srq(c);
			return true;
		case IB_USER_VERBS_CMD_MODIFY_SRQ:
			return true;
		case IB_USER_VERBS_CMD_QUERY_SRQ:
			put(response_of(c), c.out_words * 4u, &srq_query,
			    sizeof(srq_query));
			return true;
		case IB_USER_VERBS_CMD_DESTROY_SRQ:
			reply_destroy_srq(c);
			return true;
		default:
			return false;
		}
	}

	// The kernel's checks of a POST_SEND/POST_RECV command, which sroce
	// only sends as a doorbell: exactly the fixed part, no work requests,
	// a wqe_size of at least the uverbs WR (ib_uverbs_post_send() and
	// ib_uverbs_unmarshall_recv()), room for the response, a known QP.
	int refuse(const Command &c) const
	{
		size_t wqe_min;

		if (c.command == IB_USER_VERBS_CMD_POST_SEND)
			wqe_min = sizeof(ib_uverbs_send_wr);
		else if (c.command == IB_USER_VERBS_CMD_POST_RECV)
			wqe_min = sizeof(ib_uverbs_recv_wr);
		else
			return 0;
		static_assert(offsetof(ib_uverbs_post_send, wqe_size) ==
				      offsetof(ib_uverbs_post_recv, wqe_size) &&
			      sizeof(ib_uverbs_post_send) ==
				      sizeof(ib_uverbs_post_recv),
			      "one layout for both commands");
		const size_t body = sizeof(ib_uverbs_cmd_hdr);
		const auto field = [&](size_t off) {
			return c.at<uint32_t>(body + off);
		};
		if (c.bytes.size() != body + sizeof(ib_uverbs_post_send) ||
		    c.out_words * 4u < sizeof(ib_uverbs_post_send_resp) ||
		    field(offsetof(ib_uverbs_post_send, qp_handle)) !=
			    kQpHandle ||
		    field(offsetof(ib_uverbs_post_send, wr_count)) ||
		    field(offsetof(ib_uverbs_post_send, sge_count)) ||
		    field(offsetof(ib_uverbs_post_send, wqe_size)) < wqe_min)
			return EINVAL;
		return 0;
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

	// libibverbs sizes the core response after the uverbs ABI it read
	// from sysfs when it listed the devices.  This test lists none, so it
	// asks for the oldest one: 8 bytes (handle and QPN, no capacities), and
	// keeps the capacities it requested.  The driver tail follows whatever
	// core it asked for, as the kernel writes it.
	void reply_create_qp(const Command &c)
	{
		auto *out = static_cast<unsigned char *>(response_of(c));
		const size_t room = c.out_words * 4u;
		const size_t req = sizeof(ib_uverbs_cmd_hdr);
		ib_uverbs_create_qp_resp core{};
		sroce_create_qp_resp drv{};
		// Like the kernel, no RQ for a QP that uses an SRQ.
		const bool has_srq = c.at<uint8_t>(
			req + offsetof(ib_uverbs_create_qp, is_srq));

		sq.make(sq_slots, sq_shift, qp_start);
		if (!has_srq)
			rq.make(rq_slots, rq_shift, qp_start);
		// No worker runs for a new QP.
		sq.hdr()->flags = SROCE_SQ_NEED_WAKEUP;

		core.qp_handle = kQpHandle;
		core.qpn = kQpn;
		core.max_send_wr = c.at<uint32_t>(
			req + offsetof(ib_uverbs_create_qp, max_send_wr));
		core.max_recv_wr = c.at<uint32_t>(
			req + offsetof(ib_uverbs_create_qp, max_recv_wr));
		core.max_send_sge = c.at<uint32_t>(
			req + offsetof(ib_uverbs_create_qp, max_send_sge));
		core.max_recv_sge = c.at<uint32_t>(
			req + offsetof(ib_uverbs_create_qp, max_recv_sge));
		core.max_inline_data = qp_inline;
		drv.sq_mmap_key = kSqKey;
		drv.sq_mmap_len = static_cast<uint32_t>(sq.len);
		drv.qpn = kQpn;
		drv.sq_slots = sq_slots;
		drv.sq_slot_shift = sq_shift;
		if (!has_srq) {
			drv.rq_mmap_key = kRqKey;
			drv.rq_mmap_len = static_cast<uint32_t>(rq.len);
			drv.rq_slots = rq_slots;
			drv.rq_slot_shift = rq_shift;
		}
		drv.max_inline_data = qp_inline;
		if (room < sizeof(drv))
			return;
		put(out, room - sizeof(drv), &core, sizeof(core));
		put(out + room - sizeof(drv), sizeof(drv), &drv, sizeof(drv));
	}

	// As for CREATE_QP, libibverbs asks for the oldest core response
	// (the handle only) and the driver tail follows it.
	void reply_create_srq(const Command &c)
	{
		auto *out = static_cast<unsigned char *>(response_of(c));
		const size_t room = c.out_words * 4u;
		ib_uverbs_create_srq_resp core{};
		sroce_create_srq_resp drv{};

		srq.make(srq_slots, srq_shift, 0);
		core.srq_handle = kSrqHandle;
		core.max_wr = srq_slots;
		core.max_sge = 3;
		drv.mmap_key = kSrqKey;
		drv.mmap_len = static_cast<uint32_t>(srq.len);
		drv.srqn = kSrqn;
		drv.slots = srq_slots;
		drv.slot_shift = srq_shift;
		if (room < sizeof(drv))
			return;
		put(out, room - sizeof(drv), &core, sizeof(core));
		put(out + room - sizeof(drv), sizeof(drv), &drv, sizeof(drv));
	}

	void reply_destroy_srq(const Command &c)
	{
		ib_uverbs_destroy_srq_resp resp{};

		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
	}

	void reply_destroy_qp(const Command &c)
	{
		ib_uverbs_destroy_qp_resp resp{};

		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
	}

	void reply_post(const Command &c)
	{
		ib_uverbs_post_send_resp resp{};	// bad_wr 0: all posted

		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
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

	// Only the context matters to libibverbs' dispatch.  An XRC SRQ
	// needs create_srq_ex, which sroce does not provide.
	ibv_pd pd{};
	pd.context = ctx.get();
	ibv_srq_init_attr_ex attr{};
	attr.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	attr.pd = &pd;
	attr.srq_type = IBV_SRQT_XRC;
	errno = 0;
	EXPECT_EQ(ibv_create_srq_ex(ctx.get(), &attr), nullptr);
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

struct QpDestroy {
	void operator()(ibv_qp *qp) const { ibv_destroy_qp(qp); }
};
using QpPtr = std::unique_ptr<ibv_qp, QpDestroy>;

template <typename T> T read_at(const unsigned char *p)
{
	T v;
	std::memcpy(&v, p, sizeof(v));
	return v;
}

// Scatter/gather buffers the WRs point at (only inline WRs read them).
unsigned char buf_a[64];
unsigned char buf_b[64];

uint64_t addr_of(const void *p)
{
	return reinterpret_cast<uintptr_t>(p);
}

// An RC QP on the fake kernel, with a context, PD and CQ to hang it on.
class ProviderQp : public ProviderContext {
protected:
	static constexpr uint32_t kSendSge = 4;
	static constexpr uint32_t kRecvSge = 3;
	static constexpr uint32_t kInline = 64;

	void SetUp() override
	{
		ProviderContext::SetUp();
		if (HasFatalFailure())
			return;
		ctx_ = open();
		ASSERT_NE(ctx_, nullptr);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_NE(pd_, nullptr);
		cq_.reset(ibv_create_cq(ctx_.get(), 8, nullptr, nullptr, 0));
		ASSERT_NE(cq_, nullptr);
	}

	ibv_qp *create_qp(uint32_t send_sge = kSendSge,
			  uint32_t recv_sge = kRecvSge)
	{
		ibv_qp_init_attr attr{};

		attr.send_cq = cq_.get();
		attr.recv_cq = cq_.get();
		attr.qp_type = IBV_QPT_RC;
		attr.cap.max_send_wr = kernel_.sq_slots;
		attr.cap.max_recv_wr = kernel_.rq_slots;
		attr.cap.max_send_sge = send_sge;
		attr.cap.max_recv_sge = recv_sge;
		attr.cap.max_inline_data = kInline;
		qp_.reset(ibv_create_qp(pd_.get(), &attr));
		return qp_.get();
	}

	int to_state(ibv_qp_state state)
	{
		ibv_qp_attr attr{};

		attr.qp_state = state;
		return ibv_modify_qp(qp_.get(), &attr, IBV_QP_STATE);
	}

	// A QP in RTS whose SQ worker is running (no doorbells wanted).
	void ready(bool running = true)
	{
		ASSERT_NE(create_qp(), nullptr) << std::strerror(errno);
		ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
		if (running)
			kernel_.sq.hdr()->flags = 0;
	}

	int post(ibv_send_wr *wr, ibv_send_wr **bad = nullptr)
	{
		ibv_send_wr *ignored = nullptr;

		return ibv_post_send(qp_.get(), wr, bad ? bad : &ignored);
	}

	int post(ibv_recv_wr *wr, ibv_recv_wr **bad = nullptr)
	{
		ibv_recv_wr *ignored = nullptr;

		return ibv_post_recv(qp_.get(), wr, bad ? bad : &ignored);
	}

	sroce_send_wqe send_slot(uint32_t idx) const
	{
		return read_at<sroce_send_wqe>(kernel_.sq.slot(idx));
	}

	sroce_sge send_sge(uint32_t idx, int i) const
	{
		return read_at<sroce_sge>(kernel_.sq.slot(idx) +
					  sizeof(sroce_send_wqe) +
					  i * sizeof(sroce_sge));
	}

	sroce_recv_wqe recv_slot(uint32_t idx) const
	{
		return read_at<sroce_recv_wqe>(kernel_.rq.slot(idx));
	}

	sroce_sge recv_sge(uint32_t idx, int i) const
	{
		return read_at<sroce_sge>(kernel_.rq.slot(idx) +
					  sizeof(sroce_recv_wqe) +
					  i * sizeof(sroce_sge));
	}

	uint32_t sq_producer() const { return kernel_.sq.hdr()->producer; }
	uint32_t rq_producer() const { return kernel_.rq.hdr()->producer; }

	size_t commands(uint32_t command) const
	{
		return std::count_if(kernel_.log.begin(), kernel_.log.end(),
				     [&](const Command &c) {
					     return c.command == command;
				     });
	}

	// Declared after the fixture's kernel and device, destroyed before.
	ContextPtr ctx_;
	PdPtr pd_;
	CqPtr cq_;
	QpPtr qp_;
};

ibv_send_wr send_wr(ibv_wr_opcode opcode, ibv_sge *sg, int num_sge,
		    uint64_t wr_id = 1)
{
	ibv_send_wr wr{};

	wr.wr_id = wr_id;
	wr.opcode = opcode;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	return wr;
}

ibv_recv_wr recv_wr(ibv_sge *sg, int num_sge, uint64_t wr_id = 1)
{
	ibv_recv_wr wr{};

	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	return wr;
}

void chain(std::vector<ibv_send_wr> &wrs)
{
	for (size_t i = 0; i + 1 < wrs.size(); i++)
		wrs[i].next = &wrs[i + 1];
}

void chain(std::vector<ibv_recv_wr> &wrs)
{
	for (size_t i = 0; i + 1 < wrs.size(); i++)
		wrs[i].next = &wrs[i + 1];
}

TEST_F(ProviderQp, CreateQpMapsBothRingsAndKeepsTheCapacities)
{
	ibv_qp *qp = create_qp();
	ASSERT_NE(qp, nullptr) << std::strerror(errno);

	EXPECT_EQ(qp->handle, FakeUverbs::kQpHandle);
	EXPECT_EQ(qp->qp_num, FakeUverbs::kQpn);
	EXPECT_EQ(qp->state, IBV_QPS_RESET);
	const sroce_qp *sqp = to_sroce_qp(qp);
	EXPECT_EQ(static_cast<void *>(sqp->sq.ring), kernel_.sq.mem.get());
	EXPECT_EQ(static_cast<void *>(sqp->rq.ring), kernel_.rq.mem.get());
	EXPECT_EQ(sqp->sq.max_sge, kSendSge);
	EXPECT_EQ(sqp->rq.max_sge, kRecvSge);
	EXPECT_EQ(sqp->max_inline_data, kInline);
}

TEST_F(ProviderQp, CreateQpRefusesMoreSgesThanASlotHolds)
{
	// 128-byte SQ slots: 64-byte header and 4 SGEs.
	errno = 0;
	EXPECT_EQ(create_qp(kSendSge + 1), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	// 64-byte RQ slots: 16-byte header and 3 SGEs.
	errno = 0;
	EXPECT_EQ(create_qp(kSendSge, kRecvSge + 1), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	// Both rings of each attempt were unmapped.
	EXPECT_EQ(kernel_.unmapped.size(), 3u);
}

TEST_F(ProviderQp, CreateQpRefusesMoreInlineBytesThanASlotHolds)
{
	kernel_.qp_inline = kInline + 1;
	errno = 0;
	EXPECT_EQ(create_qp(), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	EXPECT_EQ(kernel_.unmapped.size(), 2u);
}

TEST_F(ProviderQp, PostSendIsRefusedBeforeRts)
{
	ASSERT_NE(create_qp(), nullptr) << std::strerror(errno);
	ibv_sge sg{ addr_of(buf_a), 8, 0x77 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);

	for (ibv_qp_state state : { IBV_QPS_RESET, IBV_QPS_INIT,
				    IBV_QPS_RTR }) {
		SCOPED_TRACE(state);
		ASSERT_EQ(to_state(state), 0);
		ibv_send_wr *bad = nullptr;
		EXPECT_EQ(post(&wr, &bad), EINVAL);
		EXPECT_EQ(bad, &wr);
		EXPECT_EQ(sq_producer(), 0u);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);

	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	EXPECT_EQ(post(&wr), 0);
	EXPECT_EQ(sq_producer(), 1u);
}

TEST_F(ProviderQp, PostIsAcceptedInTheErrorState)
{
	ready();
	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	ibv_sge sg{ addr_of(buf_a), 8, 0x77 };
	ibv_send_wr swr = send_wr(IBV_WR_SEND, &sg, 1);
	ibv_recv_wr rwr = recv_wr(&sg, 1);

	EXPECT_EQ(post(&swr), 0);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_EQ(post(&rwr), 0);
	EXPECT_EQ(rq_producer(), 1u);
}

TEST_F(ProviderQp, SendSlotCarriesTheHeaderAndTheSges)
{
	ready();
	ibv_sge sg[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, sg, 2, 0xabcdef0123);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
			IBV_SEND_FENCE | IBV_SEND_IP_CSUM;
	wr.imm_data = 0xdeadbeef;	// not an IMM opcode: not carried

	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(sq_producer(), 1u);
	const sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.wr_id, 0xabcdef0123u);
	EXPECT_EQ(w.opcode, uint32_t{ IBV_WR_SEND });
	// IP_CSUM means nothing to RC and is not passed on.
	EXPECT_EQ(w.send_flags, uint32_t{ IBV_SEND_SIGNALED |
					  IBV_SEND_SOLICITED |
					  IBV_SEND_FENCE });
	EXPECT_EQ(w.ex, 0u);
	EXPECT_EQ(w.num_sge, 2u);
	EXPECT_EQ(w.inline_len, 0u);
	EXPECT_EQ(w.reserved, 0u);
	const unsigned char zero[sizeof(w.wr.raw)] = {};
	EXPECT_EQ(std::memcmp(w.wr.raw, zero, sizeof(zero)), 0);
	for (int i = 0; i < 2; i++) {
		SCOPED_TRACE(i);
		const sroce_sge s = send_sge(0, i);
		EXPECT_EQ(s.addr, sg[i].addr);
		EXPECT_EQ(s.length, sg[i].length);
		EXPECT_EQ(s.lkey, sg[i].lkey);
	}
}

TEST_F(ProviderQp, ImmediateDataIsCarriedAsGiven)
{
	ready();
	ibv_sge sg{ 0x1000, 4, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND_WITH_IMM, &sg, 1, 1),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1, 2),
	};
	chain(wrs);
	const unsigned char imm[4] = { 0x12, 0x34, 0x56, 0x78 };
	for (auto &wr : wrs)
		std::memcpy(&wr.imm_data, imm, sizeof(imm));

	ASSERT_EQ(post(wrs.data()), 0);
	for (uint32_t i = 0; i < 2; i++) {
		SCOPED_TRACE(i);
		// Byte for byte: the application's network order is kept.
		EXPECT_EQ(std::memcmp(kernel_.sq.slot(i) +
					      offsetof(sroce_send_wqe, ex),
				      imm, sizeof(imm)),
			  0);
		EXPECT_EQ(send_slot(i).opcode, uint32_t(wrs[i].opcode));
	}
}

TEST_F(ProviderQp, RdmaWrsCarryTheRemoteAddressAndKey)
{
	ready();
	ibv_sge sg{ 0x1000, 4096, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_RDMA_WRITE, &sg, 1, 1),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1, 2),
		send_wr(IBV_WR_RDMA_READ, &sg, 1, 3),
	};
	chain(wrs);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		wrs[i].wr.rdma.remote_addr = 0x7f0000001000ull + i;
		wrs[i].wr.rdma.rkey = 0xa0 + i;
	}

	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(sq_producer(), 3u);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		SCOPED_TRACE(i);
		const sroce_send_wqe w = send_slot(i);
		EXPECT_EQ(w.wr_id, i + 1);
		EXPECT_EQ(w.opcode, uint32_t(wrs[i].opcode));
		EXPECT_EQ(w.wr.rdma.remote_addr, 0x7f0000001000ull + i);
		EXPECT_EQ(w.wr.rdma.rkey, 0xa0 + i);
		EXPECT_EQ(w.wr.rdma.reserved, 0u);
		EXPECT_EQ(w.num_sge, 1u);
		EXPECT_EQ(send_sge(i, 0).length, 4096u);
	}
}

TEST_F(ProviderQp, AtomicWrsCarryTheOperandsAndOneSge)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_ATOMIC_CMP_AND_SWP, &sg, 1, 1),
		send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &sg, 1, 2),
	};
	chain(wrs);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		wrs[i].wr.atomic.remote_addr = 0x8000 + 8 * i;
		wrs[i].wr.atomic.compare_add = 0x1111111111111111ull * (i + 1);
		wrs[i].wr.atomic.swap = 0x0102030405060708ull + i;
		wrs[i].wr.atomic.rkey = 0xb0 + i;
	}

	ASSERT_EQ(post(wrs.data()), 0);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		SCOPED_TRACE(i);
		const sroce_send_wqe w = send_slot(i);
		EXPECT_EQ(w.opcode, uint32_t(wrs[i].opcode));
		EXPECT_EQ(w.wr.atomic.remote_addr, 0x8000u + 8 * i);
		EXPECT_EQ(w.wr.atomic.compare_add,
			  0x1111111111111111ull * (i + 1));
		EXPECT_EQ(w.wr.atomic.swap, 0x0102030405060708ull + i);
		EXPECT_EQ(w.wr.atomic.rkey, 0xb0 + i);
		EXPECT_EQ(w.num_sge, 1u);
		EXPECT_EQ(send_sge(i, 0).addr, 0x1000u);
		EXPECT_EQ(send_sge(i, 0).length, 8u);
	}
}

// SEND_WITH_INV carries its rkey in ex and its SGEs; LOCAL_INV only the
// rkey: a local operation's slot is its header.
TEST_F(ProviderQp, InvalidateWrsCarryTheRkey)
{
	ready();
	ibv_sge sg{ 0x1000, 64, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND_WITH_INV, &sg, 1, 1),
		send_wr(IBV_WR_LOCAL_INV, &sg, 1, 2),
	};
	chain(wrs);
	wrs[0].invalidate_rkey = 0x123456c1;
	wrs[1].invalidate_rkey = 0x654321d2;
	wrs[1].send_flags = IBV_SEND_FENCE | IBV_SEND_INLINE;

	ASSERT_EQ(post(wrs.data()), 0);
	const sroce_send_wqe w0 = send_slot(0), w1 = send_slot(1);
	EXPECT_EQ(w0.opcode, uint32_t(IBV_WR_SEND_WITH_INV));
	EXPECT_EQ(w0.ex, 0x123456c1u);
	EXPECT_EQ(w0.num_sge, 1u);
	EXPECT_EQ(send_sge(0, 0).length, 64u);
	EXPECT_EQ(w1.opcode, uint32_t(IBV_WR_LOCAL_INV));
	EXPECT_EQ(w1.ex, 0x654321d2u);
	EXPECT_EQ(w1.num_sge, 0u);
	EXPECT_EQ(w1.inline_len, 0u);
	EXPECT_EQ(w1.send_flags, unsigned(IBV_SEND_FENCE));
}

// A type 2 bind names the window by its current rkey and carries the
// new one, the MR's lkey, the range and the rights; a type 1 window is
// refused here (it is bound with ibv_bind_mw()), and so is a type 2 bind
// without an MR.
// What a bind names, without a kernel: the provider only reads the
// window's type and rkey and the MR's lkey.
struct FakeBind {
	FakeBind()
	{
		mr.lkey = 0xabcdef01;
		mw2.rkey = 0x11223344;
		mw2.type = IBV_MW_TYPE_2;
		mw1.rkey = 0x55667788;
		mw1.type = IBV_MW_TYPE_1;
		info = { &mr, 0x7f0000002000ull, 8192,
			 IBV_ACCESS_REMOTE_WRITE };
	}
	FakeBind(const FakeBind &) = delete;	// info points at mr

	ibv_mr mr{};
	ibv_mw mw2{}, mw1{};
	ibv_mw_bind_info info{};
};

TEST_F(ProviderQp, BindWrCarriesTheWindowAndTheRange)
{
	ready();
	FakeBind f;
	ibv_mw &mw2 = f.mw2, &mw1 = f.mw1;
	ibv_send_wr wr = send_wr(IBV_WR_BIND_MW, nullptr, 0, 5);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2.rkey);
	wr.bind_mw.bind_info = f.info;

	ASSERT_EQ(post(&wr), 0);
	const sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.opcode, uint32_t(IBV_WR_BIND_MW));
	EXPECT_EQ(w.wr_id, 5u);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.wr.bind.mw_rkey, 0x11223344u);
	EXPECT_EQ(w.wr.bind.new_rkey, 0x11223345u);
	EXPECT_EQ(w.wr.bind.mr_lkey, 0xabcdef01u);
	EXPECT_EQ(w.wr.bind.addr, 0x7f0000002000ull);
	EXPECT_EQ(w.wr.bind.length, 8192u);
	EXPECT_EQ(w.wr.bind.access, unsigned(IBV_ACCESS_REMOTE_WRITE));

	ibv_send_wr *bad = nullptr;
	wr.bind_mw.mw = &mw1;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.bind_info.mr = nullptr;
	wr.bind_mw.bind_info.length = 0;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(sq_producer(), 1u);
}

TEST_F(ProviderQp, InlineSendCopiesThePayloadIntoTheSlot)
{
	ready();
	std::memcpy(buf_a, "hello ", 6);
	std::memcpy(buf_b, "inline world", 12);
	ibv_sge sg[3] = { { addr_of(buf_a), 6, 0 },
			  { 0, 0, 0 },	// empty: nothing to read
			  { addr_of(buf_b), 12, 0 } };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, sg, 3, 1),
		send_wr(IBV_WR_RDMA_WRITE, sg, 1, 2),
	};
	chain(wrs);
	for (auto &wr : wrs)
		wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wrs[1].wr.rdma.remote_addr = 0x9000;
	wrs[1].wr.rdma.rkey = 0xc1;

	ASSERT_EQ(post(wrs.data()), 0);
	sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.inline_len, 18u);
	EXPECT_EQ(w.send_flags,
		  uint32_t{ IBV_SEND_INLINE | IBV_SEND_SIGNALED });
	EXPECT_EQ(std::memcmp(kernel_.sq.slot(0) + sizeof(w),
			      "hello inline world", 18),
		  0);
	w = send_slot(1);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.inline_len, 6u);
	EXPECT_EQ(w.wr.rdma.rkey, 0xc1u);
	EXPECT_EQ(std::memcmp(kernel_.sq.slot(1) + sizeof(w), "hello ", 6),
		  0);
}

TEST_F(ProviderQp, InlineFillsItsSlotAndNoMore)
{
	ready();
	std::memset(buf_a, 0x5a, sizeof(buf_a));
	// 64 inline bytes: up to the last byte of the 128-byte slot.
	ibv_sge sg[2] = { { addr_of(buf_a), 40, 0 },
			  { addr_of(buf_a), 24, 0 } };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, sg, 2);
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(kernel_.sq.slot_size(), sizeof(sroce_send_wqe) + kInline);

	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(send_slot(0).inline_len, kInline);
	const unsigned char *slot = kernel_.sq.slot(0);
	EXPECT_TRUE(std::all_of(slot + sizeof(sroce_send_wqe),
				slot + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0x5a; }));
	const unsigned char *next = kernel_.sq.slot(1);
	EXPECT_TRUE(std::all_of(next, next + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0; }));

	// One byte more does not fit.
	sg[1].length = 25;
	ibv_send_wr *bad = nullptr;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_TRUE(std::all_of(next, next + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0; }));
}

TEST_F(ProviderQp, InvalidSendWrIsReturnedAndTheOnesBeforeItArePosted)
{
	struct Case {
		const char *what;
		ibv_wr_opcode opcode;
		int num_sge;
		uint32_t len0;
		unsigned int flags;
	};
	const Case cases[] = {
		{ "too many SGEs", IBV_WR_SEND, kSendSge + 1, 8, 0 },
		{ "negative SGE count", IBV_WR_SEND, -1, 8, 0 },
		{ "BIND_MW without a window", IBV_WR_BIND_MW, 0, 8, 0 },
		{ "TSO", IBV_WR_TSO, 1, 8, 0 },
		{ "unknown opcode", static_cast<ibv_wr_opcode>(99), 1, 8, 0 },
		{ "inline READ", IBV_WR_RDMA_READ, 1, 8, IBV_SEND_INLINE },
		{ "inline atomic", IBV_WR_ATOMIC_CMP_AND_SWP, 1, 8,
		  IBV_SEND_INLINE },
		{ "atomic without SGE", IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 0 },
		{ "atomic with 2 SGEs", IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 8, 0 },
		{ "atomic of 4 bytes", IBV_WR_ATOMIC_CMP_AND_SWP, 1, 4, 0 },
		{ "atomic of 16 bytes", IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 16, 0 },
		{ "inline beyond max_inline_data", IBV_WR_SEND, 2, kInline,
		  IBV_SEND_INLINE },
	};
	ready();
	uint32_t posted = 0;

	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		ibv_sge sg[kSendSge + 1] = {};
		for (auto &s : sg)
			s = { addr_of(buf_a), 1, 0x11 };
		sg[0].length = c.len0;
		std::vector<ibv_send_wr> wrs = {
			send_wr(IBV_WR_SEND, sg, 1, 10),
			send_wr(c.opcode, sg, c.num_sge, 11),
			send_wr(IBV_WR_SEND, sg, 1, 12),
		};
		chain(wrs);
		wrs[1].send_flags = c.flags;
		ibv_send_wr *bad = nullptr;

		EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
		EXPECT_EQ(bad, &wrs[1]);
		// The first WR is published, the failing one and the rest not.
		EXPECT_EQ(sq_producer(), ++posted);
		EXPECT_EQ(send_slot(posted - 1).wr_id, 10u);
		kernel_.sq.hdr()->consumer = posted;	// keep room
	}
}

TEST_F(ProviderQp, FullSendQueueReportsEnomem)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs;
	for (uint64_t i = 0; i < kernel_.sq_slots + 1; i++)
		wrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, i));
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	// The kernel consumes nothing: 8 WRs fit, the 9th does not.
	EXPECT_EQ(post(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[8]);
	EXPECT_EQ(sq_producer(), 8u);
	EXPECT_EQ(post(&wrs[8], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[8]);
	EXPECT_EQ(sq_producer(), 8u);
	EXPECT_EQ(send_slot(0).wr_id, 0u);	// not overwritten

	// Once the kernel has released 3 slots, 3 more WRs fit.
	kernel_.sq.hdr()->consumer = 3;
	EXPECT_EQ(post(&wrs[4], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[7]);
	EXPECT_EQ(sq_producer(), 11u);
	EXPECT_EQ(send_slot(8).wr_id, 4u);
	EXPECT_EQ(send_slot(10).wr_id, 6u);
	EXPECT_EQ(send_slot(3).wr_id, 3u);	// still in use
}

TEST_F(ProviderQp, SendQueueIgnoresAConsumerBeyondTheRing)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);

	kernel_.sq.hdr()->consumer = 100;	// more than the ring could owe
	EXPECT_EQ(post(&wr), ENOMEM);
	EXPECT_EQ(sq_producer(), 0u);
}

TEST_F(ProviderQp, CountersWrapAroundTheRing)
{
	kernel_.qp_start = 0xfffffffe;
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> swrs;
	std::vector<ibv_recv_wr> rwrs;
	for (uint64_t i = 0; i < 4; i++) {
		swrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, 100 + i));
		rwrs.push_back(recv_wr(&sg, 1, 200 + i));
	}
	chain(swrs);
	chain(rwrs);

	ASSERT_EQ(post(swrs.data()), 0);
	ASSERT_EQ(post(rwrs.data()), 0);
	EXPECT_EQ(sq_producer(), 2u);
	EXPECT_EQ(rq_producer(), 2u);
	for (uint32_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(send_slot(0xfffffffe + i).wr_id, 100u + i);
		EXPECT_EQ(recv_slot(0xfffffffe + i).wr_id, 200u + i);
	}
	// The RQ (4 slots) is full across the wrap.
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(post(&rwrs[0], &bad), ENOMEM);
}

TEST_F(ProviderQp, ThePublishedProducerIsNeverReadBack)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1, 1);
	ibv_recv_wr rwr = recv_wr(&sg, 1, 1);

	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&rwr), 0);
	// Someone scribbles over the shared copies.
	kernel_.sq.hdr()->producer = 5;
	kernel_.rq.hdr()->producer = 3;
	wr.wr_id = rwr.wr_id = 2;
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&rwr), 0);
	EXPECT_EQ(sq_producer(), 2u);
	EXPECT_EQ(rq_producer(), 2u);
	EXPECT_EQ(send_slot(1).wr_id, 2u);
	EXPECT_EQ(recv_slot(1).wr_id, 2u);
	EXPECT_EQ(send_slot(5).wr_id, 0u);
}

TEST_F(ProviderQp, SqDoorbellRingsOnlyWhenTheKernelAsks)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);
	const size_t before = kernel_.log.size();

	// A new QP's worker is idle: the first post rings, which wakes it.
	ASSERT_EQ(kernel_.sq.hdr()->flags, uint32_t{ SROCE_SQ_NEED_WAKEUP });
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(kernel_.log.size(), before + 1);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_POST_SEND);
	EXPECT_EQ(c.in_words * 4u,
		  sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_post_send_resp));
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, qp_handle)),
		  FakeUverbs::kQpHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, wr_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, sge_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, wqe_size)),
		  sizeof(ib_uverbs_send_wr));
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 1 });

	// The worker runs: no doorbell.
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(kernel_.log.size(), before + 1);

	// It went idle again.
	kernel_.sq.hdr()->flags = SROCE_SQ_NEED_WAKEUP;
	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(kernel_.sq_doorbells, (std::vector<uint32_t>{ 1, 4 }));
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);
}

TEST_F(ProviderQp, SqDoorbellRingsOncePerCallAfterEveryWrIsPublished)
{
	ready(false);
	kernel_.wake_clears_sq_flag = false;
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs;
	for (uint64_t i = 0; i < 3; i++)
		wrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, i));
	chain(wrs);

	ASSERT_EQ(post(wrs.data()), 0);
	// One doorbell, which found all three WRs published.
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 3 });

	wrs[0].next = nullptr;
	ASSERT_EQ(post(&wrs[0]), 0);
	ASSERT_EQ(post(&wrs[0]), 0);
	EXPECT_EQ(kernel_.sq_doorbells, (std::vector<uint32_t>{ 3, 4, 5 }));
}

TEST_F(ProviderQp, NoDoorbellWhenNothingWasPosted)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, kSendSge + 1);
	ibv_recv_wr rwr = recv_wr(&sg, kRecvSge + 1);
	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;

	EXPECT_EQ(post(&wr), EINVAL);
	EXPECT_EQ(post(&rwr), EINVAL);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);
}

TEST_F(ProviderQp, AFailedWrStillRingsForTheOnesBeforeIt)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, &sg, 1, 1),
		send_wr(IBV_WR_TSO, &sg, 1, 2),
	};
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
	EXPECT_EQ(bad, &wrs[1]);
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 1 });
}

TEST_F(ProviderQp, FailedSqDoorbellIsReported)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, &sg, 1, 1),
		send_wr(IBV_WR_SEND, &sg, 1, 2),
	};
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	kernel_.fail_command = IB_USER_VERBS_CMD_POST_SEND;
	kernel_.fail_errno = EIO;
	EXPECT_EQ(post(wrs.data(), &bad), EIO);
	EXPECT_EQ(bad, &wrs[0]);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);
	// The WRs are in the ring all the same.
	EXPECT_EQ(sq_producer(), 2u);
}

TEST_F(ProviderQp, PostRecvIsRefusedInResetOnly)
{
	ASSERT_NE(create_qp(), nullptr) << std::strerror(errno);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(rq_producer(), 0u);
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	EXPECT_EQ(post(&wr), 0);
	ASSERT_EQ(to_state(IBV_QPS_RTR), 0);
	EXPECT_EQ(post(&wr), 0);
	EXPECT_EQ(rq_producer(), 2u);
}

TEST_F(ProviderQp, RecvSlotCarriesTheSges)
{
	ready();
	ibv_sge sg[3] = { { 0x1000, 100, 0x11 },
			  { 0x2000, 200, 0x22 },
			  { 0x3000, 300, 0x33 } };
	std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 3, 0x1234567890),
					 recv_wr(sg, 0, 7) };
	chain(wrs);

	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(rq_producer(), 2u);
	sroce_recv_wqe w = recv_slot(0);
	EXPECT_EQ(w.wr_id, 0x1234567890u);
	EXPECT_EQ(w.num_sge, 3u);
	EXPECT_EQ(w.reserved, 0u);
	for (int i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		const sroce_sge s = recv_sge(0, i);
		EXPECT_EQ(s.addr, sg[i].addr);
		EXPECT_EQ(s.length, sg[i].length);
		EXPECT_EQ(s.lkey, sg[i].lkey);
	}
	w = recv_slot(1);
	EXPECT_EQ(w.wr_id, 7u);
	EXPECT_EQ(w.num_sge, 0u);
}

TEST_F(ProviderQp, InvalidRecvWrIsReturnedAndTheOnesBeforeItArePosted)
{
	ready();
	ibv_sge sg[kRecvSge + 1] = {};
	for (const int num_sge : { int(kRecvSge) + 1, -1 }) {
		SCOPED_TRACE(num_sge);
		std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 1, 1),
						 recv_wr(sg, num_sge, 2),
						 recv_wr(sg, 1, 3) };
		chain(wrs);
		ibv_recv_wr *bad = nullptr;
		const uint32_t before = rq_producer();

		EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
		EXPECT_EQ(bad, &wrs[1]);
		EXPECT_EQ(rq_producer(), before + 1);
		EXPECT_EQ(recv_slot(before).wr_id, 1u);
	}
}

TEST_F(ProviderQp, FullReceiveQueueReportsEnomem)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_recv_wr> wrs;
	for (uint64_t i = 0; i < kernel_.rq_slots + 2; i++)
		wrs.push_back(recv_wr(&sg, 1, i));
	chain(wrs);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[4]);
	EXPECT_EQ(rq_producer(), 4u);
	kernel_.rq.hdr()->consumer = 1;
	EXPECT_EQ(post(&wrs[4], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[5]);
	EXPECT_EQ(rq_producer(), 5u);
	EXPECT_EQ(recv_slot(4).wr_id, 4u);
}

TEST_F(ProviderQp, RqDoorbellRingsOnlyWhenTheKernelAsks)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_recv_wr> wrs = { recv_wr(&sg, 1, 1),
					 recv_wr(&sg, 1, 2) };
	chain(wrs);

	// Outside the error state a receive needs no doorbell.
	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);

	// In error, the kernel flushes: every post rings, once per call.
	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;
	ASSERT_EQ(post(wrs.data()), 0);
	kernel_.rq.hdr()->consumer = 4;		// flushed
	wrs[0].next = nullptr;
	ASSERT_EQ(post(&wrs[0]), 0);
	EXPECT_EQ(kernel_.rq_doorbells, (std::vector<uint32_t>{ 4, 5 }));
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_POST_RECV);
	EXPECT_EQ(c.in_words * 4u,
		  sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_recv));
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, qp_handle)),
		  FakeUverbs::kQpHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, wr_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, sge_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, wqe_size)),
		  sizeof(ib_uverbs_recv_wr));
	// The RQ's flag does not concern the SQ, nor the reverse.
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

TEST_F(ProviderQp, FailedRqDoorbellIsReported)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;

	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;
	kernel_.fail_command = IB_USER_VERBS_CMD_POST_RECV;
	kernel_.fail_errno = ENODEV;
	EXPECT_EQ(post(&wr, &bad), ENODEV);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(rq_producer(), 1u);
}

TEST_F(ProviderQp, ConcurrentPostersGetDistinctSlots)
{
	constexpr uint32_t kThreads = 4;
	constexpr uint32_t kEach = 16384;
	kernel_.sq_slots = kThreads * kEach;
	kernel_.rq_slots = kThreads * kEach;
	ready();
	std::atomic<uint32_t> waiting{ kThreads };
	std::vector<std::thread> threads;

	for (uint32_t t = 0; t < kThreads; t++) {
		threads.emplace_back([this, t, &waiting] {
			ibv_sge sg{ 0x1000, 8, 0x11 };

			// Start together, to collide as often as possible.
			waiting--;
			while (waiting)
				std::this_thread::yield();
			for (uint32_t i = 0; i < kEach; i++) {
				const uint64_t id = uint64_t{ t } << 32 | i;
				ibv_send_wr swr =
					send_wr(IBV_WR_SEND, &sg, 1, id);
				ibv_recv_wr rwr = recv_wr(&sg, 1, id);
				if (post(&swr) || post(&rwr))
					return;
			}
		});
	}
	for (auto &th : threads)
		th.join();

	EXPECT_EQ(sq_producer(), kThreads * kEach);
	EXPECT_EQ(rq_producer(), kThreads * kEach);
	std::set<uint64_t> sent, received;
	for (uint32_t i = 0; i < kThreads * kEach; i++) {
		sent.insert(send_slot(i).wr_id);
		received.insert(recv_slot(i).wr_id);
	}
	// Every WR in a slot of its own.
	EXPECT_EQ(sent.size(), size_t{ kThreads * kEach });
	EXPECT_EQ(received.size(), size_t{ kThreads * kEach });
}

// -- Shared receive queues ------------------------------------------------

struct SrqDestroy {
	void operator()(ibv_srq *srq) const { ibv_destroy_srq(srq); }
};
using SrqPtr = std::unique_ptr<ibv_srq, SrqDestroy>;

class ProviderSrq : public ProviderQp {
protected:
	ibv_srq *create_srq(uint32_t max_wr = 4, uint32_t max_sge = 3)
	{
		ibv_srq_init_attr attr{};

		attr.attr.max_wr = max_wr;
		attr.attr.max_sge = max_sge;
		srq_.reset(ibv_create_srq(pd_.get(), &attr));
		return srq_.get();
	}

	int post_srq(ibv_recv_wr *wr, ibv_recv_wr **bad = nullptr)
	{
		ibv_recv_wr *ignored = nullptr;

		return ibv_post_srq_recv(srq_.get(), wr, bad ? bad : &ignored);
	}

	sroce_recv_wqe srq_slot(uint32_t idx) const
	{
		return read_at<sroce_recv_wqe>(kernel_.srq.slot(idx));
	}

	uint32_t srq_producer() const { return kernel_.srq.hdr()->producer; }

	// Declared after the fixture's PD and CQ, destroyed before them; the
	// QP that uses the SRQ goes first.
	SrqPtr srq_;
	QpPtr srq_qp_;
};

TEST_F(ProviderSrq, CreateSrqSendsTheRequestAndMapsTheRing)
{
	ibv_srq *srq = create_srq(3, 2);
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_SRQ);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq,
						pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq, max_wr)),
		  3u);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq,
						max_sge)),
		  2u);
	EXPECT_EQ(srq->handle, FakeUverbs::kSrqHandle);
	const sroce_srq *ssrq = to_sroce_srq(srq);
	EXPECT_EQ(static_cast<void *>(ssrq->rq.ring), kernel_.srq.mem.get());
	EXPECT_EQ(ssrq->rq.num_slots, kernel_.srq_slots);
	EXPECT_EQ(ssrq->srqn, FakeUverbs::kSrqn);
}

TEST_F(ProviderSrq, CreateSrqRefusesMoreSgesThanASlotHolds)
{
	// 64-byte slots: a 16-byte header and 3 SGEs.
	errno = 0;
	EXPECT_EQ(create_srq(4, 4), nullptr);
	EXPECT_EQ(errno, EPROTO);
	// The kernel's SRQ is not left behind.
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_SRQ);
}

TEST_F(ProviderSrq, PostSrqRecvFillsSlotsWithoutASystemCallUntilFull)
{
	ASSERT_NE(create_srq(), nullptr) << std::strerror(errno);
	ibv_sge sg[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	std::vector<ibv_recv_wr> wrs;
	for (uint64_t i = 0; i < kernel_.srq_slots + 1; i++)
		wrs.push_back(recv_wr(sg, 2, 100 + i));
	chain(wrs);
	const size_t before = kernel_.log.size();
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[4]);
	EXPECT_EQ(srq_producer(), 4u);
	for (uint32_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		const sroce_recv_wqe w = srq_slot(i);
		EXPECT_EQ(w.wr_id, 100u + i);
		EXPECT_EQ(w.num_sge, 2u);
		const sroce_sge s = read_at<sroce_sge>(
			kernel_.srq.slot(i) + sizeof(sroce_recv_wqe) +
			sizeof(sroce_sge));
		EXPECT_EQ(s.addr, sg[1].addr);
		EXPECT_EQ(s.length, sg[1].length);
		EXPECT_EQ(s.lkey, sg[1].lkey);
	}
	// The kernel consumed one: room for exactly one more.
	kernel_.srq.hdr()->consumer = 1;
	EXPECT_EQ(post_srq(&wrs[4]), 0);
	EXPECT_EQ(srq_producer(), 5u);
	EXPECT_EQ(srq_slot(4).wr_id, 104u);
	EXPECT_EQ(kernel_.log.size(), before);
}

TEST_F(ProviderSrq, PostSrqRecvRefusesMoreSgesThanGranted)
{
	ASSERT_NE(create_srq(), nullptr) << std::strerror(errno);
	ibv_sge sg[4] = {};
	std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 1, 1), recv_wr(sg, 4, 2) };
	chain(wrs);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq(wrs.data(), &bad), EINVAL);
	EXPECT_EQ(bad, &wrs[1]);
	EXPECT_EQ(srq_producer(), 1u);
}

TEST_F(ProviderSrq, ModifyAndQueryGoToTheKernel)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	ibv_srq_attr attr{};

	attr.srq_limit = 3;
	ASSERT_EQ(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_MODIFY_SRQ);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						srq_handle)),
		  FakeUverbs::kSrqHandle);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						attr_mask)),
		  uint32_t{ IBV_SRQ_LIMIT });
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						srq_limit)),
		  3u);

	kernel_.srq_query = { 4, 3, 1, 0 };
	attr = {};
	ASSERT_EQ(ibv_query_srq(srq, &attr), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_QUERY_SRQ);
	EXPECT_EQ(attr.max_wr, 4u);
	EXPECT_EQ(attr.max_sge, 3u);
	EXPECT_EQ(attr.srq_limit, 1u);
}

TEST_F(ProviderSrq, DestroySrqDestroysThenUnmaps)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	kernel_.fail_command = IB_USER_VERBS_CMD_DESTROY_SRQ;
	kernel_.fail_errno = EBUSY;
	EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);
	EXPECT_TRUE(kernel_.unmapped.empty());	// still usable

	kernel_.fail_command = ~0u;
	ASSERT_EQ(ibv_destroy_srq(srq_.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DESTROY_SRQ);
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
				 offsetof(ib_uverbs_destroy_srq, srq_handle)),
		  FakeUverbs::kSrqHandle);
	ASSERT_EQ(kernel_.unmapped.size(), 1u);
	EXPECT_EQ(kernel_.unmapped[0], kernel_.srq.mem.get());
}

TEST_F(ProviderSrq, QpWithAnSrqHasNoRqAndRefusesPostRecv)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	ibv_qp_init_attr attr{};

	attr.send_cq = cq_.get();
	attr.recv_cq = cq_.get();
	attr.srq = srq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = kernel_.sq_slots;
	attr.cap.max_send_sge = kSendSge;
	srq_qp_.reset(ibv_create_qp(pd_.get(), &attr));
	ASSERT_NE(srq_qp_, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_QP);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_qp,
						srq_handle)),
		  FakeUverbs::kSrqHandle);
	EXPECT_EQ(c.at<uint8_t>(req + offsetof(ib_uverbs_create_qp, is_srq)),
		  1u);
	const sroce_qp *sqp = to_sroce_qp(srq_qp_.get());
	EXPECT_EQ(static_cast<void *>(sqp->sq.ring), kernel_.sq.mem.get());
	EXPECT_EQ(sqp->rq.ring, nullptr);

	ibv_qp_attr qa{};
	qa.qp_state = IBV_QPS_INIT;
	ASSERT_EQ(ibv_modify_qp(srq_qp_.get(), &qa, IBV_QP_STATE), 0);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(srq_qp_.get(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	// Refused in the provider: nothing reached the kernel.
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_MODIFY_QP);
}

// -- The extended send API (ibv_qp_ex) on the same slots ------------------

constexpr uint64_t kQpExRcOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
// The memory operations, which UD QPs do not have and UC only partly.
constexpr uint64_t kQpExMemOps = IBV_QP_EX_WITH_LOCAL_INV |
				 IBV_QP_EX_WITH_BIND_MW |
				 IBV_QP_EX_WITH_SEND_WITH_INV;

class ProviderQpEx : public ProviderQp {
protected:
	ibv_qp_ex *create_qp_ex(uint64_t ops = kQpExRcOps,
				ibv_qp_type type = IBV_QPT_RC)
	{
		ibv_qp_init_attr_ex attr{};

		attr.send_cq = cq_.get();
		attr.recv_cq = cq_.get();
		attr.qp_type = type;
		attr.cap.max_send_wr = kernel_.sq_slots;
		attr.cap.max_recv_wr = kernel_.rq_slots;
		attr.cap.max_send_sge = kSendSge;
		attr.cap.max_recv_sge = kRecvSge;
		attr.cap.max_inline_data = kInline;
		attr.comp_mask = IBV_QP_INIT_ATTR_PD |
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		attr.pd = pd_.get();
		attr.send_ops_flags = ops;
		qp_.reset(ibv_create_qp_ex(ctx_.get(), &attr));
		return qp_ ? ibv_qp_to_qp_ex(qp_.get()) : nullptr;
	}

	// An extended QP in RTS; running: no doorbells wanted.
	ibv_qp_ex *ready_ex(bool running = true, uint64_t ops = kQpExRcOps)
	{
		ibv_qp_ex *x = create_qp_ex(ops);
		if (!x || to_state(IBV_QPS_RTS))
			return nullptr;
		if (running)
			kernel_.sq.hdr()->flags = 0;
		return x;
	}

	// The bytes of a slot the kernel reads: the header and its SGEs or
	// inline data (the rest may be left over from an earlier WR).
	std::vector<unsigned char> slot_bytes(uint32_t idx) const
	{
		const unsigned char *p = kernel_.sq.slot(idx);
		const sroce_send_wqe w = send_slot(idx);
		const size_t body = w.inline_len ? w.inline_len :
				    w.num_sge * sizeof(sroce_sge);
		return { p, p + sizeof(w) + body };
	}
};

TEST_F(ProviderQpEx, UnsupportedOperationsAreRefusedBeforeTheKernel)
{
	const struct {
		ibv_qp_type type;
		uint64_t op;
	} refused[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
	};
	for (const auto &r : refused) {
		SCOPED_TRACE(r.op);
		SCOPED_TRACE(r.type);
		errno = 0;
		EXPECT_EQ(create_qp_ex(IBV_QP_EX_WITH_SEND | r.op, r.type),
			  nullptr);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_CREATE_QP), 0u);
	ibv_qp_ex *x = create_qp_ex(kQpExRcOps | kQpExMemOps);
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_CREATE_QP), 1u);
	EXPECT_NE(x->wr_bind_mw, nullptr);
	EXPECT_NE(x->wr_local_inv, nullptr);
	EXPECT_NE(x->wr_send_inv, nullptr);
}

// LOCAL_INV, SEND_WITH_INV and a type 2 bind through ibv_wr_*() leave the
// bytes ibv_post_send() leaves; a type 1 window or a bind without an MR
// fails the batch.
TEST_F(ProviderQpEx, MemoryOperationsAreThoseOfPostSend)
{
	ibv_qp_ex *x = ready_ex(true, kQpExRcOps | kQpExMemOps);
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	ibv_sge sg{ 0x1000, 100, 0x11 };
	FakeBind f;
	ibv_mw &mw2 = f.mw2, &mw1 = f.mw1;
	const ibv_mw_bind_info &info = f.info;
	const uint32_t flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;

	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_LOCAL_INV, nullptr, 0, 200),
		send_wr(IBV_WR_SEND_WITH_INV, &sg, 1, 201),
		send_wr(IBV_WR_BIND_MW, nullptr, 0, 202),
	};
	chain(wrs);
	for (auto &wr : wrs)
		wr.send_flags = flags;
	wrs[0].invalidate_rkey = 0x01020304;
	wrs[1].invalidate_rkey = 0x05060708;
	wrs[2].bind_mw.mw = &mw2;
	wrs[2].bind_mw.rkey = ibv_inc_rkey(mw2.rkey);
	wrs[2].bind_mw.bind_info = info;
	ASSERT_EQ(post(wrs.data()), 0);
	ASSERT_EQ(sq_producer(), 3u);
	std::vector<std::vector<unsigned char>> want;
	for (uint32_t i = 0; i < 3; i++)
		want.push_back(slot_bytes(i));
	kernel_.sq.hdr()->consumer = 3;

	ibv_wr_start(x);
	x->wr_flags = flags;
	x->wr_id = 200;
	ibv_wr_local_inv(x, 0x01020304);
	x->wr_id = 201;
	ibv_wr_send_inv(x, 0x05060708);
	ibv_wr_set_sge(x, sg.lkey, sg.addr, sg.length);
	x->wr_id = 202;
	ibv_wr_bind_mw(x, &mw2, ibv_inc_rkey(mw2.rkey), &info);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_producer(), 6u);
	for (uint32_t i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(slot_bytes(3 + i), want[i]);
	}
	EXPECT_EQ(mw2.rkey, 0x11223344u) << "the application keeps the key";

	ibv_wr_start(x);
	ibv_wr_local_inv(x, 1);
	ibv_wr_bind_mw(x, &mw1, ibv_inc_rkey(mw1.rkey), &info);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_mw_bind_info no_mr = info;
	no_mr.mr = nullptr;
	no_mr.length = 0;
	ibv_wr_start(x);
	ibv_wr_bind_mw(x, &mw2, ibv_inc_rkey(mw2.rkey), &no_mr);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	// a memory operation carries no data
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 1);
	ibv_wr_set_sge(x, sg.lkey, sg.addr, sg.length);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(sq_producer(), 6u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

// Every operation written through ibv_wr_*() leaves exactly the bytes
// ibv_post_send() leaves for the same work request.
TEST_F(ProviderQpEx, SlotsAreThoseOfPostSend)
{
	ibv_qp_ex *x = ready_ex();
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	std::memset(buf_a, 0x3c, sizeof(buf_a));
	ibv_sge two[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	ibv_sge inl[2] = { { addr_of(buf_a), 10, 0 },
			   { addr_of(buf_a) + 20, 30, 0 } };
	ibv_sge eight{ 0x3000, 8, 0x33 };
	const uint32_t flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	const __be32 imm = htobe32(0x01020304);

	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, two, 2, 100),
		send_wr(IBV_WR_SEND_WITH_IMM, inl, 2, 101),
		send_wr(IBV_WR_RDMA_WRITE, two, 2, 102),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, inl, 2, 103),
		send_wr(IBV_WR_RDMA_READ, two, 1, 104),
		send_wr(IBV_WR_ATOMIC_CMP_AND_SWP, &eight, 1, 105),
		send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &eight, 1, 106),
	};
	chain(wrs);
	for (auto &wr : wrs) {
		wr.send_flags = flags;
		wr.imm_data = imm;
		wr.wr.rdma.remote_addr = 0xaaaa0000;
		wr.wr.rdma.rkey = 0xbbbb;
	}
	wrs[1].send_flags |= IBV_SEND_INLINE;
	wrs[3].send_flags |= IBV_SEND_INLINE;
	for (int i : { 5, 6 }) {
		wrs[i].wr.atomic.remote_addr = 0xcccc0008;
		wrs[i].wr.atomic.rkey = 0xdddd;
		wrs[i].wr.atomic.compare_add = 0x1111222233334444;
		wrs[i].wr.atomic.swap = 0x5555666677778888;
	}
	ASSERT_EQ(post(wrs.data()), 0);
	ASSERT_EQ(sq_producer(), 7u);
	std::vector<std::vector<unsigned char>> want;
	for (uint32_t i = 0; i < 7; i++)
		want.push_back(slot_bytes(i));
	kernel_.sq.hdr()->consumer = 7;	// the kernel took them

	const ibv_data_buf bufs[2] = { { buf_a, 10 }, { buf_a + 20, 30 } };
	ibv_wr_start(x);
	x->wr_flags = flags;
	x->wr_id = 100;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 101;
	ibv_wr_send_imm(x, imm);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 102;
	ibv_wr_rdma_write(x, 0xbbbb, 0xaaaa0000);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 103;
	ibv_wr_rdma_write_imm(x, 0xbbbb, 0xaaaa0000, imm);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 104;
	ibv_wr_rdma_read(x, 0xbbbb, 0xaaaa0000);
	ibv_wr_set_sge(x, two[0].lkey, two[0].addr, two[0].length);
	x->wr_id = 105;
	ibv_wr_atomic_cmp_swp(x, 0xdddd, 0xcccc0008, 0x1111222233334444,
			      0x5555666677778888);
	ibv_wr_set_sge(x, eight.lkey, eight.addr, eight.length);
	x->wr_id = 106;
	// fetch-and-add carries only the addend: post_send's swap is not sent
	ibv_wr_atomic_fetch_add(x, 0xdddd, 0xcccc0008, 0x1111222233334444);
	ibv_wr_set_sge(x, eight.lkey, eight.addr, eight.length);
	EXPECT_EQ(sq_producer(), 7u) << "published before wr_complete";
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_producer(), 14u);

	for (uint32_t i = 0; i < 7; i++) {
		SCOPED_TRACE(i);
		std::vector<unsigned char> got = slot_bytes(7 + i);
		if (i == 6) {	// see above: swap differs by design
			const size_t off = offsetof(sroce_send_wqe, wr.atomic.swap);
			std::memset(&want[i][off], 0, 8);
		}
		EXPECT_EQ(got, want[i]);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

TEST_F(ProviderQpEx, AbortAndFailedBatchesPostNothing)
{
	ibv_qp_ex *x = ready_ex(false);	// NEED_WAKEUP set
	ASSERT_NE(x, nullptr) << std::strerror(errno);

	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ibv_wr_abort(x);
	EXPECT_EQ(sq_producer(), 0u);

	// A bad WR after a good one discards both.
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ibv_wr_atomic_fetch_add(x, 1, 0x2000, 1);
	ibv_wr_set_sge(x, 0x11, 0x1000, 4);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(sq_producer(), 0u);

	// Too many SGEs; a setter with no WR; inline past max_inline_data.
	std::vector<ibv_sge> many(kSendSge + 1, ibv_sge{ 0x1000, 1, 0x11 });
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, many.size(), many.data());
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, buf_a, kInline + 1);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);

	// More WRs than the ring holds: ENOMEM, none posted.
	ibv_wr_start(x);
	for (uint32_t i = 0; i <= kernel_.sq_slots; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	}
	EXPECT_EQ(ibv_wr_complete(x), ENOMEM);
	EXPECT_EQ(sq_producer(), 0u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);

	// The QP is not stuck: the discarded slots are written again.
	ibv_wr_start(x);
	x->wr_id = 77;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_EQ(send_slot(0).wr_id, 77u);
}

TEST_F(ProviderQpEx, CompleteRingsOnceWhenTheKernelAsks)
{
	ibv_qp_ex *x = ready_ex(false);
	ASSERT_NE(x, nullptr) << std::strerror(errno);

	ibv_wr_start(x);
	for (uint64_t id = 1; id <= 3; id++) {
		x->wr_id = id;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	}
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_producer(), 3u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);

	// An empty batch rings nothing.
	ibv_wr_start(x);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);

	// Before RTS nothing is accepted.
	ASSERT_EQ(to_state(IBV_QPS_RESET), 0);
	ibv_wr_start(x);
	ibv_wr_send(x);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
}

} // namespace
