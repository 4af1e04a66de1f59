// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The fixtures of the provider tests against the fake kernel
// (provider_uverbs_fake.h): a device and context as libibverbs builds
// them (ProviderContext), and an RC QP on them (ProviderQp) with the
// helpers that read its ring slots.
#ifndef SROCE_TEST_PROVIDER_UVERBS_FIXTURE_H
#define SROCE_TEST_PROVIDER_UVERBS_FIXTURE_H

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "provider_uverbs_fake.h"

namespace sroce_provider_test {

// Loads the provider once per process and, like libibverbs, never unloads
// it: its registered ops must stay mapped.
inline const verbs_device_ops *provider_ops()
{
	static void *const handle = dlopen(SROCE_PROVIDER_PATH, RTLD_NOW);

	if (!handle || registered.empty())
		return nullptr;
	return registered.front();
}

inline bool fd_is_open(int fd)
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

struct SrqDestroy {
	void operator()(ibv_srq *srq) const { ibv_destroy_srq(srq); }
};
using SrqPtr = std::unique_ptr<ibv_srq, SrqDestroy>;

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

	// How many times the fake kernel received command.
	size_t commands(uint32_t command) const
	{
		return std::count_if(kernel_.log.begin(), kernel_.log.end(),
				     [&](const Command &c) {
					     return c.command == command;
				     });
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
inline unsigned char buf_a[64];
inline unsigned char buf_b[64];

inline uint64_t addr_of(const void *p)
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

	// Declared after the fixture's kernel and device, destroyed before.
	ContextPtr ctx_;
	PdPtr pd_;
	CqPtr cq_;
	QpPtr qp_;
};

inline ibv_send_wr send_wr(ibv_wr_opcode opcode, ibv_sge *sg, int num_sge,
			   uint64_t wr_id = 1)
{
	ibv_send_wr wr{};

	wr.wr_id = wr_id;
	wr.opcode = opcode;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	return wr;
}

inline ibv_recv_wr recv_wr(ibv_sge *sg, int num_sge, uint64_t wr_id = 1)
{
	ibv_recv_wr wr{};

	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	return wr;
}

inline void chain(std::vector<ibv_send_wr> &wrs)
{
	for (size_t i = 0; i + 1 < wrs.size(); i++)
		wrs[i].next = &wrs[i + 1];
}

inline void chain(std::vector<ibv_recv_wr> &wrs)
{
	for (size_t i = 0; i + 1 < wrs.size(); i++)
		wrs[i].next = &wrs[i + 1];
}

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

} // namespace sroce_provider_test

#endif
