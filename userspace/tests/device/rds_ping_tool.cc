// sroce_rds_ping: RDS (Reliable Datagram Sockets) over the RDMA transport,
// for selftests/ulp.sh (t_rds_ping).  Debian packages no rds-tools, so this
// is the ping: an echo server and a client that checks every byte echoed.
// Both sockets are PF_RDS/SOCK_SEQPACKET with SO_RDS_TRANSPORT set to
// RDS_TRANS_IB before bind (the kernel's rds_rdma then carries them over
// rdma_cm and an RC QP of the RDMA device that owns the bound address; the
// bind fails if none does) and the transport read back after bind.
//
//   sroce_rds_ping server [-c COUNT] [-t SECONDS] LOCAL_IP4 PORT
//	Bind to LOCAL_IP4:PORT, print "bound", then send every message
//	received back to its sender, unchanged; exit after COUNT (default 1)
//	messages.  Fails if SECONDS (default 30) pass without a message.
//   sroce_rds_ping client [-n ROUNDS] [-s SIZES] [-t SECONDS] LOCAL_IP4
//		PEER_IP4 PORT
//	Bind to LOCAL_IP4 (any port) and send ROUNDS (default 10) times one
//	message of each size in SIZES (comma-separated bytes, default
//	1,1000,8000,65536) to PEER_IP4:PORT, one at a time, each filled with
//	its own pseudo-random pattern; each echo must come from PEER_IP4:PORT
//	within SECONDS (default 30) with the message's length and bytes.
//
// Exit status 0 if every message did that, 1 with a message on stderr
// otherwise (a mismatch, a time limit, a failed call), 2 for a usage error.
#include <arpa/inet.h>
#include <linux/rds.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "fd.h"

namespace {

using sroce::test::Fd;
using Clock = std::chrono::steady_clock;

// the largest RDS message (RDS_MAX_MSG_SIZE in net/rds/rds.h), and one byte
// more so that a longer one shows
constexpr size_t kMaxMsg = size_t(1) << 20;

const char kUsage[] =
	"usage: sroce_rds_ping server [-c COUNT] [-t SECONDS] LOCAL_IP4 PORT\n"
	"       sroce_rds_ping client [-n ROUNDS] [-s SIZES] [-t SECONDS] "
	"LOCAL_IP4 PEER_IP4 PORT\n";

[[noreturn]] void usage(const std::string &msg)
{
	std::cerr << "sroce_rds_ping: " << msg << "\n" << kUsage;
	std::exit(2);
}

[[noreturn]] void die(const std::string &what)
{
	std::cerr << "sroce_rds_ping: " << what << "\n";
	std::exit(1);
}

[[noreturn]] void die_errno(const std::string &what)
{
	die(what + ": " + std::strerror(errno));
}

unsigned long number(const char *what, const std::string &text,
		     unsigned long min, unsigned long max)
{
	char *end = nullptr;

	errno = 0;
	const unsigned long v = std::strtoul(text.c_str(), &end, 10);
	if (text.empty() || text[0] == '-' || *end || errno || v < min ||
	    v > max)
		usage(std::string(what) + " '" + text + "': not a number from " +
		      std::to_string(min) + " to " + std::to_string(max));
	return v;
}

sockaddr_in address(const std::string &ip, unsigned long port)
{
	sockaddr_in sin{};

	sin.sin_family = AF_INET;
	sin.sin_port = htons(uint16_t(port));
	if (inet_pton(AF_INET, ip.c_str(), &sin.sin_addr) != 1)
		usage("not an IPv4 address: " + ip);
	return sin;
}

std::string to_string(const sockaddr_in &sin)
{
	char buf[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &sin.sin_addr, buf, sizeof(buf));
	return std::string(buf) + ":" + std::to_string(ntohs(sin.sin_port));
}

// An RDS socket on the IB transport (rds_rdma), bound to local.
Fd rds_socket(const sockaddr_in &local)
{
	Fd fd(socket(PF_RDS, SOCK_SEQPACKET, 0));
	int trans = RDS_TRANS_IB;
	socklen_t len = sizeof(trans);

	if (fd.get() < 0)
		die_errno("socket(PF_RDS) (is rds_rdma loaded?)");
	if (setsockopt(fd.get(), SOL_RDS, SO_RDS_TRANSPORT, &trans,
		       sizeof(trans)))
		die_errno("setsockopt(SO_RDS_TRANSPORT, RDS_TRANS_IB)");
	if (bind(fd.get(), reinterpret_cast<const sockaddr *>(&local),
		 sizeof(local)))
		die_errno("bind to " + to_string(local) +
			  " on the IB transport (no RDMA device with it?)");
	trans = -1;
	if (getsockopt(fd.get(), SOL_RDS, SO_RDS_TRANSPORT, &trans, &len))
		die_errno("getsockopt(SO_RDS_TRANSPORT)");
	if (trans != RDS_TRANS_IB)
		die("bound socket's transport is " + std::to_string(trans) +
		    ", not RDS_TRANS_IB");
	return fd;
}

int ms_left(Clock::time_point deadline)
{
	const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
		deadline - Clock::now());
	return left.count() > 0 ? int(left.count()) : 0;
}

// Wait until fd is ready for events; false at the deadline.
bool wait_ready(int fd, short events, Clock::time_point deadline)
{
	for (;;) {
		pollfd p{fd, events, 0};
		const int n = poll(&p, 1, ms_left(deadline));

		if (n < 0 && errno != EINTR)
			die_errno("poll");
		if (n > 0) {
			if (p.revents & (POLLERR | POLLNVAL))
				die("poll: error on the socket");
			return true;
		}
		if (Clock::now() >= deadline)
			return false;
	}
}

// Receive one message into buf (its length: returned), its sender into
// from; -1 at the deadline.  (RDS also reports congestion-map updates as
// readable, so a readable socket may have nothing to receive.)
ssize_t receive(int fd, std::vector<uint8_t> &buf, sockaddr_in &from,
		Clock::time_point deadline)
{
	for (;;) {
		if (!wait_ready(fd, POLLIN, deadline))
			return -1;
		iovec iov{buf.data(), buf.size()};
		msghdr msg{};
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			die_errno("recvmsg");
		if (msg.msg_flags & MSG_TRUNC)
			die("a message longer than " + std::to_string(buf.size()) +
			    " bytes");
		if (msg.msg_namelen < sizeof(from) || from.sin_family != AF_INET)
			die("a message without an IPv4 sender");
		return n;
	}
}

// Send len bytes of buf to to; false at the deadline.  The socket's send
// queue may be full (EAGAIN) or the receiver's port congested (ENOBUFS):
// both pass, so both are waited out.
bool send_to(int fd, const uint8_t *buf, size_t len, const sockaddr_in &to,
	     Clock::time_point deadline)
{
	for (;;) {
		const ssize_t n = sendto(fd, buf, len, MSG_DONTWAIT,
					 reinterpret_cast<const sockaddr *>(&to),
					 sizeof(to));
		if (n == ssize_t(len))
			return true;
		if (n >= 0)
			die("sendto sent " + std::to_string(n) + " of " +
			    std::to_string(len) + " bytes");
		if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			die_errno("sendto " + to_string(to));
		if (Clock::now() >= deadline)
			return false;
		// poll wakes on space in the send queue, not on the end of
		// congestion: wait a little at most
		pollfd p{fd, POLLOUT, 0};
		if (poll(&p, 1, std::min(ms_left(deadline), 50)) < 0 &&
		    errno != EINTR)
			die_errno("poll");
	}
}

// The pattern of message seq: xorshift32 bytes from a seed of its own.
void fill(std::vector<uint8_t> &buf, size_t len, uint32_t seq)
{
	uint32_t x = 0x9e3779b9u ^ (seq * 0x85ebca6bu);

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = uint8_t(x >> 24);
	}
}

std::vector<size_t> sizes_of(const std::string &list)
{
	std::vector<size_t> sizes;
	size_t start = 0;

	for (;;) {
		const size_t comma = list.find(',', start);
		sizes.push_back(number("-s", list.substr(start, comma - start), 1,
				       kMaxMsg));
		if (comma == std::string::npos)
			return sizes;
		start = comma + 1;
	}
}

// What the command line says (the options of both modes, their defaults).
struct Options {
	unsigned long count = 1;	// server: messages to echo
	unsigned long rounds = 10;	// client: rounds of SIZES
	std::vector<size_t> sizes{1, 1000, 8000, 65536};
	unsigned long secs = 30;	// each wait's limit
	std::vector<std::string> args;	// the arguments after the options
};

// The options in optstring (getopt's), then exactly nargs arguments, else
// a usage error saying what.
Options parse(int argc, char **argv, const char *optstring, int nargs,
	      const char *what)
{
	Options o;
	int c;

	while ((c = getopt(argc, argv, optstring)) != -1) {
		switch (c) {
		case 'c':
			o.count = number("-c", optarg, 1, 1ul << 30);
			break;
		case 'n':
			o.rounds = number("-n", optarg, 1, 1ul << 20);
			break;
		case 's':
			o.sizes = sizes_of(optarg);
			break;
		case 't':
			o.secs = number("-t", optarg, 1, 86400);
			break;
		default:
			usage("unknown option");
		}
	}
	if (argc - optind != nargs)
		usage(what);
	o.args.assign(argv + optind, argv + argc);
	return o;
}

int server(int argc, char **argv)
{
	const Options o = parse(argc, argv, "+c:t:", 2,
				"server takes LOCAL_IP4 PORT");
	const unsigned long count = o.count, secs = o.secs;
	const sockaddr_in local =
		address(o.args[0], number("PORT", o.args[1], 1, 65535));
	const Fd fd = rds_socket(local);
	std::vector<uint8_t> buf(kMaxMsg + 1);
	unsigned long long bytes = 0;

	std::cout << "bound " << to_string(local) << " transport ib"
		  << std::endl;
	for (unsigned long i = 0; i < count; i++) {
		sockaddr_in from{};
		const ssize_t n = receive(fd.get(), buf, from,
					  Clock::now() + std::chrono::seconds(secs));
		if (n < 0)
			die("no message in " + std::to_string(secs) + " s after " +
			    std::to_string(i) + " of " + std::to_string(count));
		if (!send_to(fd.get(), buf.data(), size_t(n), from,
			     Clock::now() + std::chrono::seconds(secs)))
			die("echo of " + std::to_string(n) + " bytes to " +
			    to_string(from) + " not sent in " +
			    std::to_string(secs) + " s");
		bytes += size_t(n);
	}
	std::cout << "echoed " << count << " messages, " << bytes << " bytes"
		  << std::endl;
	return 0;
}

int client(int argc, char **argv)
{
	const Options o = parse(argc, argv, "+n:s:t:", 3,
				"client takes LOCAL_IP4 PEER_IP4 PORT");
	const unsigned long secs = o.secs;
	const sockaddr_in peer =
		address(o.args[1], number("PORT", o.args[2], 1, 65535));
	const Fd fd = rds_socket(address(o.args[0], 0));
	std::vector<uint8_t> out(kMaxMsg), in(kMaxMsg + 1);
	unsigned long long bytes = 0;
	uint32_t seq = 0;
	const auto t0 = Clock::now();

	for (unsigned long r = 0; r < o.rounds; r++) {
		for (const size_t len : o.sizes) {
			const auto deadline =
				Clock::now() + std::chrono::seconds(secs);
			const std::string what = "message " + std::to_string(seq) +
						 " (" + std::to_string(len) +
						 " bytes)";
			sockaddr_in from{};

			fill(out, len, seq);
			if (!send_to(fd.get(), out.data(), len, peer, deadline))
				die(what + " not sent in " + std::to_string(secs) +
				    " s");
			const ssize_t n = receive(fd.get(), in, from, deadline);
			if (n < 0)
				die(what + ": no echo in " + std::to_string(secs) +
				    " s");
			if (from.sin_addr.s_addr != peer.sin_addr.s_addr ||
			    from.sin_port != peer.sin_port)
				die(what + ": a message from " + to_string(from) +
				    ", not " + to_string(peer));
			if (size_t(n) != len)
				die(what + ": echo of " + std::to_string(n) +
				    " bytes");
			const auto diff = std::mismatch(out.begin(),
							out.begin() + len,
							in.begin());
			if (diff.first != out.begin() + len)
				die(what + ": echo differs first at byte " +
				    std::to_string(diff.first - out.begin()));
			bytes += len;
			seq++;
		}
	}
	const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		Clock::now() - t0);
	std::cout << seq << " messages, " << bytes << " bytes, echoed intact by "
		  << to_string(peer) << " in " << ms.count() << " ms"
		  << std::endl;
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2)
		usage("no mode");
	const std::string mode = argv[1];
	if (mode == "-h" || mode == "--help") {
		std::cout << kUsage;
		return 0;
	}
	if (mode == "server")
		return server(argc - 1, argv + 1);
	if (mode == "client")
		return client(argc - 1, argv + 1);
	usage("unknown mode " + mode);
}
