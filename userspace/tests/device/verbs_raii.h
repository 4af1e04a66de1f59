// RAII owners for libibverbs handles used by the device tests.
#ifndef SROCE_TESTS_VERBS_RAII_H
#define SROCE_TESTS_VERBS_RAII_H

#include <infiniband/verbs.h>

#include <memory>

namespace sroce::test {

struct DeviceListDeleter {
	void operator()(ibv_device **l) const { ibv_free_device_list(l); }
};
struct ContextDeleter {
	void operator()(ibv_context *c) const { ibv_close_device(c); }
};
struct PdDeleter {
	void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); }
};
struct CqDeleter {
	void operator()(ibv_cq *c) const { ibv_destroy_cq(c); }
};
struct MrDeleter {
	void operator()(ibv_mr *m) const { ibv_dereg_mr(m); }
};
struct QpDeleter {
	void operator()(ibv_qp *q) const { ibv_destroy_qp(q); }
};
struct ChannelDeleter {
	void operator()(ibv_comp_channel *c) const
	{
		ibv_destroy_comp_channel(c);
	}
};
struct SrqDeleter {
	void operator()(ibv_srq *s) const { ibv_destroy_srq(s); }
};
struct AhDeleter {
	void operator()(ibv_ah *a) const { ibv_destroy_ah(a); }
};
struct MwDeleter {
	void operator()(ibv_mw *m) const { ibv_dealloc_mw(m); }
};
struct TdDeleter {
	void operator()(ibv_td *t) const { ibv_dealloc_td(t); }
};
struct XrcdDeleter {
	void operator()(ibv_xrcd *x) const { ibv_close_xrcd(x); }
};
// An extended CQ is destroyed through its ibv_cq.
struct CqExDeleter {
	void operator()(ibv_cq_ex *c) const
	{
		ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	}
};

using DeviceList = std::unique_ptr<ibv_device *, DeviceListDeleter>;
using Context = std::unique_ptr<ibv_context, ContextDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Qp = std::unique_ptr<ibv_qp, QpDeleter>;
using Channel = std::unique_ptr<ibv_comp_channel, ChannelDeleter>;
using Srq = std::unique_ptr<ibv_srq, SrqDeleter>;
using Ah = std::unique_ptr<ibv_ah, AhDeleter>;
using Mw = std::unique_ptr<ibv_mw, MwDeleter>;
using Td = std::unique_ptr<ibv_td, TdDeleter>;
using Xrcd = std::unique_ptr<ibv_xrcd, XrcdDeleter>;
// An XRC SRQ (ibv_create_srq_ex() of IBV_SRQT_XRC) is an ibv_srq, destroyed
// by ibv_destroy_srq() like any other: the same owner.
using XrcSrq = Srq;
using CqEx = std::unique_ptr<ibv_cq_ex, CqExDeleter>;

} // namespace sroce::test

#endif
