// The TCP side channel of the two-guest tools (sroce_rc_retry,
// sroce_pmem): one server accepts one client, and each side sends the
// other a line with what addresses its QP and buffer (Wire), then short
// control lines ("ready", "done ...").  Every wait is bounded.
//
// The functions here call peer::die() on any failure: the tool's name and
// the message on stderr, exit status 1.
#ifndef SROCE_TESTS_PEER_EXCHANGE_H
#define SROCE_TESTS_PEER_EXCHANGE_H

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include "fd.h"
#include "verbs_util.h"

namespace sroce::test::peer {

[[noreturn]] inline void die(const std::string &what)
{
	std::cerr << program_invocation_short_name << ": " << what << "\n";
	std::exit(1);
}

inline void check(const ::testing::AssertionResult &r)
{
	if (!r)
		die(r.message());
}

using sroce::test::Fd;

// Waits at most limit for fd to become readable; false on timeout.
inline bool readable(int fd, Clock::duration limit)
{
	pollfd p{fd, POLLIN, 0};
	const auto ms =
		std::chrono::duration_cast<std::chrono::milliseconds>(limit);

	return poll(&p, 1, int(ms.count())) == 1;
}

inline void send_line(int fd, const std::string &line)
{
	const std::string s = line + "\n";

	if (send(fd, s.data(), s.size(), MSG_NOSIGNAL) != ssize_t(s.size()))
		die("TCP send: " + err_str(errno));
}

// The next line from fd (without its newline), within limit.
inline std::string recv_line(int fd, Clock::duration limit, const char *what)
{
	const auto deadline = Clock::now() + limit;
	std::string line;
	char c;

	for (;;) {
		const auto left = deadline - Clock::now();
		if (left <= Clock::duration::zero() || !readable(fd, left))
			die(std::string("no ") + what + " from the peer in time");
		const ssize_t n = recv(fd, &c, 1, 0);
		if (n <= 0)
			die(std::string("the peer closed before its ") + what);
		if (c == '\n')
			return line;
		line += c;
	}
}

// What one side tells the other to address its QP and buffer.
struct Wire {
	uint32_t qpn = 0, psn = 0, rkey = 0;
	uint64_t addr = 0;
	ibv_gid gid{};

	std::string text() const
	{
		std::ostringstream o;

		o << qpn << ' ' << psn << ' ' << rkey << ' ' << addr << ' '
		  << std::hex;
		for (uint8_t b : gid.raw)
			o << (b >> 4) << (b & 15);
		return o.str();
	}

	static Wire parse(const std::string &s)
	{
		std::istringstream in(s);
		std::string hex;
		Wire w;

		if (!(in >> w.qpn >> w.psn >> w.rkey >> w.addr >> hex) ||
		    hex.size() != 32)
			die("malformed exchange line from the peer: " + s);
		for (size_t i = 0; i < 16; i++)
			w.gid.raw[i] = uint8_t(
				std::stoul(hex.substr(2 * i, 2), nullptr, 16));
		return w;
	}
};

// Opens the device under test ($SROCE_RDMA_DEV) into ctx; returns the
// index of its RoCE v2 GID of $SROCE_IP4, with that GID in gid.
inline int open_device_at_ip4(Context &ctx, ibv_gid &gid)
{
	const char *ip = std::getenv("SROCE_IP4");

	ctx = open_device(test_device_name());
	if (!ctx)
		die("cannot open the device \"" + test_device_name() +
		    "\" ($SROCE_RDMA_DEV)");
	if (!ip)
		die("$SROCE_IP4 is not set");
	const int sgid = ipv4_gid(ctx.get(), gid, ip);
	if (sgid < 0)
		die(std::string("no RoCE v2 GID for ") + ip);
	return sgid;
}

// The one client's connection to a server listening on TCP port (IPv4),
// within 120 s (scaled by SROCE_TEST_SLOW).
inline Fd accept_one(const std::string &port)
{
	addrinfo hints{}, *ai = nullptr;
	int one = 1;

	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(nullptr, port.c_str(), &hints, &ai))
		die("bad port " + port);
	Fd lsn(socket(AF_INET, SOCK_STREAM, 0));
	if (lsn.get() < 0 ||
	    setsockopt(lsn.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lsn.get(), ai->ai_addr, ai->ai_addrlen) ||
	    listen(lsn.get(), 1)) {
		freeaddrinfo(ai);
		die("cannot listen on TCP port " + port + ": " + err_str(errno));
	}
	freeaddrinfo(ai);
	if (!readable(lsn.get(), slow(std::chrono::seconds{120})))
		die("no client connected in time");
	Fd conn(accept(lsn.get(), nullptr, nullptr));
	if (conn.get() < 0)
		die("accept: " + err_str(errno));
	return conn;
}

// A connection to the server at host:port (IPv4).
inline Fd connect_to_server(const std::string &host, const std::string &port)
{
	addrinfo hints{}, *ai = nullptr;

	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host.c_str(), port.c_str(), &hints, &ai))
		die("cannot resolve " + host + ":" + port);
	Fd conn(socket(AF_INET, SOCK_STREAM, 0));
	if (conn.get() < 0 ||
	    ::connect(conn.get(), ai->ai_addr, ai->ai_addrlen)) {
		freeaddrinfo(ai);
		die("cannot connect to " + host + ":" + port + ": " +
		    err_str(errno));
	}
	freeaddrinfo(ai);
	return conn;
}

} // namespace sroce::test::peer

#endif
