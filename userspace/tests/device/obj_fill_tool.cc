// sroce_obj_fill: create objects at the device's advertised maxima until a
// create fails, for selftests/device.sh (t_memcg_limits).  Not a GoogleTest
// binary: the shell puts it into a memory cgroup (or not) and asserts what
// the cgroup and the kernel show afterwards.
//
//   sroce_obj_fill ROUNDS [CQE]
//	Each round creates, and keeps, a CQ of CQE entries (default
//	max_cqe), an SRQ of
//	max_srq_wr WQEs of max_srq_sge SGEs and an RC QP of max_qp_wr send
//	and receive WQEs of max_sge SGEs each, from ibv_query_device.  Stops at
//	the first create that fails or after ROUNDS rounds, prints what it
//	created and frees everything on exit.
//
// The device is $SROCE_RDMA_DEV.  Exit status 0 if every round completed,
// 10 if a create failed with ENOMEM, 1 if a create failed with another
// errno or something else went wrong, 2 for a usage error.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "verbs_raii.h"

namespace {

using namespace sroce::test;

constexpr int kExitNoMem = 10;

[[noreturn]] void die(const std::string &what)
{
	std::cerr << "sroce_obj_fill: " << what << "\n";
	std::exit(1);
}

Context open_named(const std::string &name)
{
	int n = 0;
	DeviceList list(ibv_get_device_list(&n));
	Context ctx;

	for (int i = 0; list && i < n; i++)
		if (name == ibv_get_device_name(list.get()[i]))
			ctx.reset(ibv_open_device(list.get()[i]));
	return ctx;
}

// What was created, in the order it was; destroyed in reverse on return
// (QPs before the SRQs and CQs they use).
struct Objects {
	Cq qp_cq;			// the CQ all QPs complete into
	std::vector<Cq> cqs;
	std::vector<Srq> srqs;
	std::vector<Qp> qps;

	~Objects()
	{
		qps.clear();
		srqs.clear();
		cqs.clear();
	}
};

// errno of the failed create, 0 if the round completed.
int fill_round(ibv_context *ctx, ibv_pd *pd, const ibv_device_attr &da,
	       int cqe, Objects &objs)
{
	Cq cq(ibv_create_cq(ctx, cqe, nullptr, nullptr, 0));
	if (!cq)
		return errno;
	objs.cqs.push_back(std::move(cq));
	std::cout << "cq cqe=" << cqe << "\n";

	ibv_srq_init_attr sa{};
	sa.attr.max_wr = da.max_srq_wr;
	sa.attr.max_sge = da.max_srq_sge;
	Srq srq(ibv_create_srq(pd, &sa));
	if (!srq)
		return errno;
	objs.srqs.push_back(std::move(srq));
	std::cout << "srq wr=" << da.max_srq_wr << " sge=" << da.max_srq_sge
		  << "\n";

	ibv_qp_init_attr qa{};
	qa.send_cq = objs.qp_cq.get();
	qa.recv_cq = objs.qp_cq.get();
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = da.max_qp_wr;
	qa.cap.max_recv_wr = da.max_qp_wr;
	qa.cap.max_send_sge = da.max_sge;
	qa.cap.max_recv_sge = da.max_sge;
	Qp qp(ibv_create_qp(pd, &qa));
	if (!qp)
		return errno;
	objs.qps.push_back(std::move(qp));
	std::cout << "qp wr=" << da.max_qp_wr << " sge=" << da.max_sge << "\n";
	return 0;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		std::cerr << "usage: sroce_obj_fill ROUNDS [CQE]\n";
		return 2;
	}
	const int rounds = std::atoi(argv[1]);
	const int cqe_arg = argc == 3 ? std::atoi(argv[2]) : 0;
	const char *dev = std::getenv("SROCE_RDMA_DEV");
	if (rounds < 1 || (argc == 3 && cqe_arg < 1) || !dev) {
		std::cerr << "sroce_obj_fill: ROUNDS >= 1, CQE >= 1 and "
			     "SROCE_RDMA_DEV needed\n";
		return 2;
	}

	Context ctx = open_named(dev);
	if (!ctx)
		die(std::string("cannot open ") + dev);
	ibv_device_attr da{};
	if (ibv_query_device(ctx.get(), &da))
		die("ibv_query_device failed");
	Pd pd(ibv_alloc_pd(ctx.get()));
	if (!pd)
		die("ibv_alloc_pd failed");

	Objects objs;
	objs.qp_cq.reset(ibv_create_cq(ctx.get(), 1, nullptr, nullptr, 0));
	if (!objs.qp_cq)
		die("cannot create the QPs' CQ");

	int err = 0;
	int done = 0;
	const int cqe = cqe_arg ? cqe_arg : da.max_cqe;
	while (done < rounds &&
	       !(err = fill_round(ctx.get(), pd.get(), da, cqe, objs)))
		done++;
	const size_t created = objs.cqs.size() + objs.srqs.size() + objs.qps.size();
	std::cout << "created " << created << " objects in " << done
		  << " full rounds";
	if (!err) {
		std::cout << ", no create failed\n";
		return 0;
	}
	std::cout << ", then a create failed: " << std::strerror(err) << "\n";
	return err == ENOMEM ? kExitNoMem : 1;
}
