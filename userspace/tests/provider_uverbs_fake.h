// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The fake uverbs kernel the provider tests (provider_*_test.cc) run the
// provider against, with the real libibverbs 44.  The interposed
// entry points are defined once, in provider_uverbs_fake.cc.
//
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
//    The import verbs' methods have no write() encoding: a test of them
//    adds the ioctl() half, FakeUverbsIoctl (provider_uverbs_fake_ioctl.h).
//
// Driving the provider through libibverbs' public entry points
// (ibv_alloc_pd() ...) also proves that its ops sit in the slots libibverbs
// dispatches from, i.e. the verbs_context_ops layout.
#ifndef SROCE_TEST_PROVIDER_UVERBS_FAKE_H
#define SROCE_TEST_PROVIDER_UVERBS_FAKE_H

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
#include <utility>
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

extern "C" ssize_t write(int fd, const void *buf, size_t len);

namespace sroce_provider_test {

// What the provider's constructor registered (verbs_register_driver_34),
// and the fake kernel the interposed calls go to, if any.
inline std::vector<const verbs_device_ops *> registered;
class FakeUverbs;
inline FakeUverbs *active_fake;

using RealWrite = ssize_t (*)(int, const void *, size_t);

inline RealWrite real_write()
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

	// What the kernel puts in the GET_CONTEXT driver tail (and in
	// QUERY_CONTEXT's, provider_uverbs_fake_ioctl.h).
	uint32_t abi_version = SROCE_UVERBS_ABI_VERSION;
	uint32_t context_inline = 64;	// its max_inline_data
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
	// CREATE_XSRQ's core response names the SRQ: this number (the
	// driver tail's is kSrqn, which a correct kernel repeats).
	uint32_t xsrq_core_srqn = kSrqn;
	// A resize (MODIFY_SRQ with MAX_WR and sroce's request) makes this
	// ring, at the old ring's producer, and mmap() of kSrqResizedKey
	// maps it.
	static constexpr uint64_t kSrqResizedKey = 0x9000;
	uint32_t srq_resized_slots = 8;
	FakeRing srq_resized;

	// The XRCD OPEN_XRCD hands out, the handle OPEN_QP does.
	static constexpr uint32_t kXrcdHandle = 0x66;
	static constexpr uint32_t kOpenQpHandle = 0x77;
	// The keys of the rings mmap() gave out, in order.
	std::vector<uint64_t> mapped;

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
		void *const ring = find_ring(key, len);
		if (!ring)
			return fail_map(EINVAL);
		mapped.push_back(key);
		return ring;
	}

	bool owns_mapping(void *addr) const
	{
		return addr &&
		       (addr == ring_mem.get() || addr == sq.mem.get() ||
			addr == rq.mem.get() || addr == srq.mem.get() ||
			addr == srq_resized.mem.get());
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
		case IB_USER_VERBS_CMD_CREATE_XSRQ:
			reply_create_srq(c);
			return true;
		case IB_USER_VERBS_CMD_MODIFY_SRQ:
			reply_modify_srq(c);
			return true;
		case IB_USER_VERBS_CMD_QUERY_SRQ:
			put(response_of(c), c.out_words * 4u, &srq_query,
			    sizeof(srq_query));
			return true;
		case IB_USER_VERBS_CMD_DESTROY_SRQ:
			reply_destroy_srq(c);
			return true;
		case IB_USER_VERBS_CMD_OPEN_XRCD:
			reply_open_xrcd(c);
			return true;
		case IB_USER_VERBS_CMD_CLOSE_XRCD:
			return true;
		case IB_USER_VERBS_CMD_OPEN_QP:
			reply_open_qp(c);
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
		drv.max_inline_data = context_inline;
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

	void *find_ring(uint64_t key, size_t len) const
	{
		if (key == kCqKey && ring_mem && len == ring_len)
			return ring_mem.get();
		const std::pair<uint64_t, const FakeRing *> rings[] = {
			{ kSqKey, &sq },
			{ kRqKey, &rq },
			{ kSrqKey, &srq },
			{ kSrqResizedKey, &srq_resized },
		};
		for (const auto &[k, r] : rings)
			if (key == k && r->mem && len == r->len)
				return r->mem.get();
		return nullptr;
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
		const auto type = c.at<uint8_t>(
			req + offsetof(ib_uverbs_create_qp, qp_type));
		// Like the kernel, no RQ with an SRQ or for an XRC send QP.
		const bool has_rq = !c.at<uint8_t>(req + offsetof(
					    ib_uverbs_create_qp, is_srq)) &&
				    type != IBV_QPT_XRC_SEND;

		core.qp_handle = kQpHandle;
		core.qpn = kQpn;
		// ib_core makes an XRC receive QP without udata: the driver
		// makes no rings and writes no tail.
		if (type == IBV_QPT_XRC_RECV) {
			put(out, room, &core, sizeof(core));
			return;
		}
		sq.make(sq_slots, sq_shift, qp_start);
		if (has_rq)
			rq.make(rq_slots, rq_shift, qp_start);
		// No worker runs for a new QP.
		sq.hdr()->flags = SROCE_SQ_NEED_WAKEUP;

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
		if (has_rq) {
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

	// OPEN_QP reaches no driver: the core response only, for the QP
	// number asked for.
	void reply_open_qp(const Command &c)
	{
		ib_uverbs_create_qp_resp core{};

		core.qp_handle = kOpenQpHandle;
		core.qpn = c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
					  offsetof(ib_uverbs_open_qp, qpn));
		put(response_of(c), c.out_words * 4u, &core, sizeof(core));
	}

	void reply_open_xrcd(const Command &c)
	{
		ib_uverbs_open_xrcd_resp resp{};

		resp.xrcd_handle = kXrcdHandle;
		put(response_of(c), c.out_words * 4u, &resp, sizeof(resp));
	}

	// As for CREATE_QP, libibverbs asks for the oldest core response
	// (the handle only) for CREATE_SRQ, and the driver tail follows it.
	// CREATE_XSRQ has one core response, with the XRC SRQ's number.
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
		core.srqn = xsrq_core_srqn;
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

	// A resize carries sroce's request, the address of a CREATE_SRQ tail
	// for the new ring; the kernel carries the producer over.
	void reply_modify_srq(const Command &c)
	{
		const size_t req = sizeof(ib_uverbs_cmd_hdr);
		const auto mask = c.at<uint32_t>(
			req + offsetof(ib_uverbs_modify_srq, attr_mask));
		sroce_create_srq_resp drv{};

		if (!(mask & IBV_SRQ_MAX_WR) ||
		    c.bytes.size() < req + sizeof(ib_uverbs_modify_srq) +
					     sizeof(sroce_modify_srq_cmd))
			return;
		const auto addr = c.at<uint64_t>(
			req + sizeof(ib_uverbs_modify_srq) +
			offsetof(sroce_modify_srq_cmd, resp_addr));
		srq_resized.make(srq_resized_slots, srq_shift,
				 srq.hdr()->producer);
		drv.mmap_key = kSrqResizedKey;
		drv.mmap_len = static_cast<uint32_t>(srq_resized.len);
		drv.srqn = kSrqn;
		drv.slots = srq_resized_slots;
		drv.slot_shift = srq_shift;
		std::memcpy(reinterpret_cast<void *>(
				    static_cast<uintptr_t>(addr)),
			    &drv, sizeof(drv));
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

} // namespace sroce_provider_test

#endif
