// Shared contexts (Import.*, part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Import.*'
// ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3): a context made
// from a copy of another's command fd (dup() here, SCM_RIGHTS to a forked
// child) shares that context's kernel objects; a PD and an MR imported by
// handle are used like one's own (new MRs on the PD, CQs and QPs on the
// context, the MR's lkey in a work request), and unimporting frees the
// userspace object only.  The data moved is checked byte for byte, and the
// device's live objects (debugfs) come back to what they were.
// rdma_rxe's provider imports nothing: there every case skips.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "fd.h"
#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test::rc {
namespace {

constexpr size_t kLen = 3 * 4096 + 100;
constexpr int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

struct UnimportPd {
	void operator()(ibv_pd *p) const { ibv_unimport_pd(p); }
};
struct UnimportMr {
	void operator()(ibv_mr *m) const { ibv_unimport_mr(m); }
};
using ImportedPd = std::unique_ptr<ibv_pd, UnimportPd>;
using ImportedMr = std::unique_ptr<ibv_mr, UnimportMr>;

// e's QP, then its CQs (a CQ a QP uses cannot be destroyed).
void drop(End &e)
{
	e.qp.reset();
	e.scq.reset();
	e.rcq.reset();
}

class Import : public Rc {
protected:
	void SetUp() override
	{
		Rc::SetUp();
		if (HasFatalFailure() || IsSkipped())
			return;
		before_ = debugfs_counts();
		Context c = import_ctx();
		if (!c && errno == EOPNOTSUPP && !testing_sroce())
			GTEST_SKIP() << not_sroce("ibv_import_device");
		ASSERT_TRUE(c) << "ibv_import_device: " << std::strerror(errno);
	}

	// A context on a dup() of ctx_'s command fd; the fd is the new
	// context's (closed by ibv_close_device(), or on failure).
	Context import_ctx()
	{
		const int fd = dup(ctx_->cmd_fd);
		if (fd < 0)
			return Context();
		Context c(ibv_import_device(fd));
		if (!c && fcntl(fd, F_GETFD) >= 0) {
			const int e = errno;
			close(fd);
			errno = e;
		}
		return c;
	}

	// a WRITEs len bytes from [addr, +len) under lkey to raddr/rkey,
	// signaled, and the completion says so.
	static ::testing::AssertionResult write(End &a, uint64_t addr,
						uint32_t lkey, uint64_t raddr,
						uint32_t rkey, uint64_t id)
	{
		ibv_sge sg{addr, uint32_t(kLen), lkey};
		if (post(a.qp.get(), {rdma_wr(id, IBV_WR_RDMA_WRITE, &sg, 1,
					      raddr, rkey)}))
			return ::testing::AssertionFailure()
			       << "ibv_post_send: " << std::strerror(errno);
		return completes(a.scq.get(),
				 {ok(id, IBV_WC_RDMA_WRITE, a.qp.get())});
	}

	// ctx_'s own PD and src's MR still work: a WRITE from src through a
	// new pair of QPs lands in a new region of pd_, whose MR is then
	// deregistered.
	::testing::AssertionResult original_still_writes(Region &src,
							 uint64_t id,
							 const char *what)
	{
		Region dst(pd_.get(), kLen, kRemote);
		if (!dst)
			return ::testing::AssertionFailure()
			       << "region: " << std::strerror(errno);
		{
			End a, b;
			::testing::AssertionResult r = pair(a, b);
			if (r)
				r = write(a, src.buf.addr(), src.mr->lkey,
					  dst.buf.addr(), dst.mr->rkey, id);
			if (!r)
				return r;
		}
		::testing::AssertionResult r = same(dst.buf.data(),
						    src.buf.data(), kLen, what);
		if (!r)
			return r;
		if (ibv_dereg_mr(dst.mr.release()))
			return ::testing::AssertionFailure()
			       << "ibv_dereg_mr: " << std::strerror(errno);
		return ::testing::AssertionSuccess();
	}

	std::map<std::string, long> before_;
};

// A context imported from a dup()ed fd shares ctx_'s ucontext, PD and MR:
// the PD and MR come back with the same handle, keys and length; a new MR
// on the imported PD and a QP of the imported context move data through
// the imported MR's lkey to a QP of ctx_; after unimporting, ctx_'s PD and
// MR work as before, and nothing is left behind.
TEST_F(Import, DupedFdSharesPdAndMr)
{
	Region src(pd_.get(), kLen, IBV_ACCESS_LOCAL_WRITE, 11);
	ASSERT_TRUE(src) << std::strerror(errno);
	{
		Context ictx = import_ctx();
		ASSERT_TRUE(ictx) << std::strerror(errno);
		EXPECT_NE(ictx.get(), ctx_.get());
		EXPECT_EQ(ictx->device, ctx_->device);
		EXPECT_EQ(ictx->num_comp_vectors, ctx_->num_comp_vectors);
		// One kernel ucontext for both: importing makes none.
		EXPECT_EQ(debugfs_count("ucontexts"), before_["ucontexts"]);

		ImportedPd ipd(ibv_import_pd(ictx.get(), pd_->handle));
		ASSERT_TRUE(ipd) << "ibv_import_pd: " << std::strerror(errno);
		EXPECT_EQ(ipd->handle, pd_->handle);
		EXPECT_EQ(ipd->context, ictx.get());
		ImportedMr imr(ibv_import_mr(ipd.get(), src.mr->handle));
		ASSERT_TRUE(imr) << "ibv_import_mr: " << std::strerror(errno);
		EXPECT_EQ(imr->handle, src.mr->handle);
		EXPECT_EQ(imr->lkey, src.mr->lkey);
		EXPECT_EQ(imr->rkey, src.mr->rkey);
		EXPECT_EQ(imr->length, src.mr->length);
		EXPECT_EQ(imr->addr, nullptr) << "ibv_import_mr(3)";
		EXPECT_EQ(imr->pd, ipd.get());
		EXPECT_EQ(imr->context, ictx.get());
		EXPECT_EQ(debugfs_count("pds"), before_["pds"]);

		{
			Region dst(ipd.get(), kLen, kRemote);
			ASSERT_TRUE(dst) << "ibv_reg_mr on the imported PD: "
					 << std::strerror(errno);
			End a, b;
			ASSERT_TRUE(make_end(a, ipd.get()));
			EXPECT_EQ(a.scq->context, ictx.get());
			ASSERT_TRUE(make_end(b, pd_.get()));
			ASSERT_TRUE(join(a, b));
			ASSERT_TRUE(write(a, src.buf.addr(), imr->lkey,
					  dst.buf.addr(), dst.mr->rkey, 1));
			EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), kLen,
					 "written through the imported MR"));
		}
		// Unimporting leaves the kernel's PD and MR alone.
		imr.reset();
		ipd.reset();
		EXPECT_EQ(debugfs_count("pds"), before_["pds"]);
		EXPECT_EQ(debugfs_count("mrs"), before_["mrs"] + 1);
	}
	EXPECT_EQ(debugfs_count("ucontexts"), before_["ucontexts"]);

	EXPECT_TRUE(original_still_writes(src, 2,
					  "written through the original MR"));
	ASSERT_EQ(ibv_dereg_mr(src.mr.release()), 0);
	EXPECT_EQ(debugfs_counts(), before_);
}

// Handles the command fd does not have fail as ib_core's lookups do:
// ENOENT for an unknown one, EINVAL for an object of another type; device
// memory is never imported.  Nothing is created on the way.
TEST_F(Import, BadHandlesAreRefused)
{
	Context ictx = import_ctx();
	ASSERT_TRUE(ictx) << std::strerror(errno);
	Cq cq(ibv_create_cq(ctx_.get(), 4, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	Region mr(pd_.get(), 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_TRUE(mr) << std::strerror(errno);
	const auto with = debugfs_counts();

	errno = 0;
	EXPECT_EQ(ibv_import_pd(ictx.get(), 0xfffff), nullptr);
	EXPECT_EQ(errno, ENOENT) << std::strerror(errno);
	errno = 0;
	EXPECT_EQ(ibv_import_pd(ictx.get(), cq->handle), nullptr);
	EXPECT_EQ(errno, EINVAL) << std::strerror(errno);
	errno = 0;
	EXPECT_EQ(ibv_import_pd(ictx.get(), mr.mr->handle), nullptr);
	EXPECT_EQ(errno, EINVAL) << std::strerror(errno);

	ImportedPd ipd(ibv_import_pd(ictx.get(), pd_->handle));
	ASSERT_TRUE(ipd) << std::strerror(errno);
	errno = 0;
	EXPECT_EQ(ibv_import_mr(ipd.get(), 0xfffff), nullptr);
	EXPECT_EQ(errno, ENOENT) << std::strerror(errno);
	errno = 0;
	EXPECT_EQ(ibv_import_mr(ipd.get(), pd_->handle), nullptr);
	EXPECT_EQ(errno, EINVAL) << std::strerror(errno);
	errno = 0;
	EXPECT_EQ(ibv_import_dm(ictx.get(), 0), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP) << std::strerror(errno);

	// A handle that was valid once is not after the object is gone.
	const uint32_t old = mr.mr->handle;
	ASSERT_EQ(ibv_dereg_mr(mr.mr.release()), 0);
	errno = 0;
	EXPECT_EQ(ibv_import_mr(ipd.get(), old), nullptr);
	EXPECT_EQ(errno, ENOENT) << std::strerror(errno);
	auto want = with;
	want["mrs"]--;
	EXPECT_EQ(debugfs_counts(), want);
}

// What the parent tells the child, besides the fd.
struct Handoff {
	uint32_t pd_handle, mr_handle, dst_rkey, peer_qpn;
	uint64_t src_addr, dst_addr;
};

bool send_all(int s, const void *p, size_t n)
{
	return send(s, p, n, MSG_NOSIGNAL) == ssize_t(n);
}

bool recv_all(int s, void *p, size_t n, int ms)
{
	pollfd pfd = {s, POLLIN, 0};
	return poll(&pfd, 1, ms) == 1 && recv(s, p, n, MSG_WAITALL) == ssize_t(n);
}

// Sends h with fd attached (SCM_RIGHTS).
bool send_fd(int s, int fd, const Handoff &h)
{
	char ctl[CMSG_SPACE(sizeof(int))] = {};
	iovec iov = {const_cast<Handoff *>(&h), sizeof(h)};
	msghdr m{};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof(ctl);
	cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(s, &m, MSG_NOSIGNAL) == ssize_t(sizeof(h));
}

// The fd sent with h, or -1.
int recv_fd(int s, Handoff &h)
{
	char ctl[CMSG_SPACE(sizeof(int))] = {};
	iovec iov = {&h, sizeof(h)};
	msghdr m{};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof(ctl);
	if (recvmsg(s, &m, MSG_WAITALL) != ssize_t(sizeof(h)))
		return -1;
	cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

// The child's steps; each failure exits with its own code.
enum ChildExit {
	kChildOk = 0,
	kNoFd = 10,
	kNoContext,
	kNoPd,
	kNoMr,
	kNoEnd,
	kNoQpn,
	kNoConnect,
	kNoGo,
	kNoWrite,
	kNoReport,
};

// A process that got only a command fd and handles, as a server would
// hand them to a worker: imports the context, the PD and the MR, makes
// its QP on them, and WRITEs through the imported MR to the parent's QP.
[[noreturn]] void child(int s, const ibv_gid &gid, int gid_index,
			const Link &link)
{
	Handoff h{};
	const int fd = recv_fd(s, h);
	if (fd < 0)
		_exit(kNoFd);
	Context ctx(ibv_import_device(fd));
	if (!ctx)
		_exit(kNoContext);
	ImportedPd pd(ibv_import_pd(ctx.get(), h.pd_handle));
	if (!pd)
		_exit(kNoPd);
	ImportedMr mr(ibv_import_mr(pd.get(), h.mr_handle));
	if (!mr)
		_exit(kNoMr);
	End a;
	if (!make_end(a, pd.get()))
		_exit(kNoEnd);
	const uint32_t qpn = a->qp_num;
	if (!send_all(s, &qpn, sizeof(qpn)))
		_exit(kNoQpn);
	if (!connect(a.qp.get(), h.peer_qpn, gid, gid_index, link))
		_exit(kNoConnect);
	char go = 0;
	if (!recv_all(s, &go, 1, 30000) || go != 'g')
		_exit(kNoGo);
	ibv_sge sg{h.src_addr, uint32_t(kLen), mr->lkey};
	ibv_send_wr wr = rdma_wr(5, IBV_WR_RDMA_WRITE, &sg, 1, h.dst_addr,
				 h.dst_rkey);
	ibv_send_wr *bad = nullptr;
	if (ibv_post_send(a.qp.get(), &wr, &bad))
		_exit(kNoWrite);
	const auto wc = next_wc(a.scq.get());
	if (!wc || wc->status != IBV_WC_SUCCESS || wc->wr_id != 5)
		_exit(kNoWrite);
	const char done = 'd';
	if (!send_all(s, &done, 1))
		_exit(kNoReport);
	// The child's QP and CQs go with its imported context; the MR and
	// PD are only unimported: they are the parent's.
	drop(a);
	mr.reset();
	pd.reset();
	ctx.reset();
	_exit(kChildOk);
}

// A forked child that receives ctx_'s command fd over a UNIX socket
// (SCM_RIGHTS) and the handles of a PD and an MR of the parent WRITEs the
// MR's memory into the parent's region through a QP of its own; the
// parent's objects outlive the child's unimports.
TEST_F(Import, ForkedChildWritesThroughImportedMr)
{
	Region src(pd_.get(), kLen, IBV_ACCESS_LOCAL_WRITE, 23);
	Region dst(pd_.get(), kLen, kRemote);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	End b;
	ASSERT_TRUE(make_end(b, pd_.get()));
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	Fd mine(sv[0]), theirs(sv[1]);

	const pid_t pid = fork();
	ASSERT_GE(pid, 0) << std::strerror(errno);
	if (pid == 0) {
		close(mine.release());
		child(theirs.get(), gid_, gid_index_, with_mtu({}));
	}
	theirs.reset();
	Handoff h{pd_->handle, src.mr->handle, dst.mr->rkey, b->qp_num,
		  src.buf.addr(), dst.buf.addr()};
	Fd sent(dup(ctx_->cmd_fd));
	EXPECT_TRUE(send_fd(mine.get(), sent.get(), h)) << std::strerror(errno);
	sent.reset();
	uint32_t qpn = 0;
	const int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(
				   kWait).count());
	const bool got_qpn = recv_all(mine.get(), &qpn, sizeof(qpn), ms);
	EXPECT_TRUE(got_qpn) << "the child's QP number";
	if (got_qpn) {
		EXPECT_TRUE(connect(b.qp.get(), qpn, gid_, gid_index_,
				    with_mtu({})));
		const char go = 'g';
		EXPECT_TRUE(send_all(mine.get(), &go, 1));
		char done = 0;
		EXPECT_TRUE(recv_all(mine.get(), &done, 1, ms) && done == 'd');
	}
	mine.reset();
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
	EXPECT_EQ(WEXITSTATUS(status), kChildOk) << "child's failed step";
	EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), kLen,
			 "written by the child"));
	EXPECT_TRUE(quiet(b.rcq.get()));

	// The parent's PD and MR are still there and usable.
	EXPECT_TRUE(original_still_writes(src, 3, "written by the parent"));
	drop(b);
	src.mr.reset();
	dst.mr.reset();
	EXPECT_EQ(debugfs_counts(), before_);
}

} // namespace
} // namespace sroce::test::rc
