// SPDX-License-Identifier: GPL-2.0
//
// tcp_pingpong: round-trip time of small messages over TCP, the TCP
// reference for perftest's ib_send_lat in `make bench` (scripts/bench).
//
//   tcp_pingpong -s [-p PORT] [-S SIZE]              server: one connection
//   tcp_pingpong [-p PORT] [-S SIZE] [-n N] [-w W] HOST   client
//
// The client sends SIZE bytes, the server echoes them, N times after W
// warm-up round trips (TCP_NODELAY on both ends).  The client prints one
// line:  "bytes S iterations N min_us .. typical_us .. avg_us .. p99_us ..
// max_us .." where typical is the median round trip and p99 the 99th
// percentile (nearest rank).  The server exits after its client hung up.

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace {

constexpr const char *kUsage =
    "Usage: tcp_pingpong -s [-p PORT] [-S SIZE]\n"
    "       tcp_pingpong [-p PORT] [-S SIZE] [-n ITERS] [-w WARMUP] HOST\n"
    "\n"
    "Round-trip time of SIZE-byte messages over TCP (TCP_NODELAY).  -s runs\n"
    "the server (echoes one client's messages, then exits); otherwise the\n"
    "client connects to HOST, does WARMUP round trips, then ITERS timed ones\n"
    "and prints: bytes S iterations N min_us X typical_us X avg_us X p99_us X\n"
    "max_us X  (typical = median, p99 = 99th percentile, nearest rank).\n"
    "\n"
    "  -s          server\n"
    "  -p PORT     TCP port (default 18600)\n"
    "  -S SIZE     message size in bytes, 1..1048576 (default 2)\n"
    "  -n ITERS    timed round trips (default 10000)\n"
    "  -w WARMUP   untimed round trips first (default 100)\n"
    "  -h, --help  this help\n";

[[noreturn]] void sys_fail(const std::string &what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd &operator=(Fd &&o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

// Owns a getaddrinfo() result list.
class AddrInfo {
 public:
  AddrInfo(const char *host, const char *port, int flags) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags;
    int rc = ::getaddrinfo(host, port, &hints, &res_);
    if (rc != 0)
      throw std::runtime_error(std::string("getaddrinfo: ") + gai_strerror(rc));
  }
  AddrInfo(const AddrInfo &) = delete;
  AddrInfo &operator=(const AddrInfo &) = delete;
  ~AddrInfo() { ::freeaddrinfo(res_); }
  const addrinfo *begin() const { return res_; }

 private:
  addrinfo *res_ = nullptr;
};

struct Options {
  bool server = false;
  std::string port = "18600";
  std::size_t size = 2;
  std::size_t iters = 10000;
  std::size_t warmup = 100;
  std::string host;
};

std::size_t parse_num(std::string_view opt, const char *arg, std::size_t lo,
                      std::size_t hi) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(arg, &end, 10);
  if (errno != 0 || end == arg || *end != '\0' || v < lo || v > hi)
    throw std::invalid_argument(std::string(opt) + ": expected a number in " +
                                std::to_string(lo) + ".." + std::to_string(hi) +
                                ", got '" + arg + "'");
  return static_cast<std::size_t>(v);
}

// Returns nullopt when --help was asked for.
std::optional<Options> parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        throw std::invalid_argument(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") return std::nullopt;
    if (a == "-s") {
      o.server = true;
    } else if (a == "-p") {
      o.port = std::to_string(parse_num(a, value(), 1, 65535));
    } else if (a == "-S") {
      o.size = parse_num(a, value(), 1, 1 << 20);
    } else if (a == "-n") {
      o.iters = parse_num(a, value(), 1, 100000000);
    } else if (a == "-w") {
      o.warmup = parse_num(a, value(), 0, 100000000);
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("unknown option " + std::string(a));
    } else if (o.host.empty()) {
      o.host = a;
    } else {
      throw std::invalid_argument("more than one HOST");
    }
  }
  if (o.server && !o.host.empty())
    throw std::invalid_argument("the server (-s) takes no HOST");
  if (!o.server && o.host.empty())
    throw std::invalid_argument("the client needs a HOST (or -s for the server)");
  return o;
}

void set_nodelay(const Fd &fd) {
  int one = 1;
  if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
    sys_fail("setsockopt(TCP_NODELAY)");
}

// Reads exactly buf.size() bytes; false on a clean end of stream before
// the first byte.
bool read_all(const Fd &fd, std::vector<char> &buf) {
  std::size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::read(fd.get(), buf.data() + got, buf.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      sys_fail("read");
    }
    if (n == 0) {
      if (got == 0) return false;
      throw std::runtime_error("connection closed in the middle of a message");
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

void write_all(const Fd &fd, const std::vector<char> &buf) {
  std::size_t put = 0;
  while (put < buf.size()) {
    ssize_t n = ::write(fd.get(), buf.data() + put, buf.size() - put);
    if (n < 0) {
      if (errno == EINTR) continue;
      sys_fail("write");
    }
    put += static_cast<std::size_t>(n);
  }
}

int run_server(const Options &o) {
  AddrInfo ai(nullptr, o.port.c_str(), AI_PASSIVE);
  const addrinfo *a = ai.begin();
  // prefer IPv4: the bench's readiness check and the peers use IPv4
  for (const addrinfo *p = ai.begin(); p; p = p->ai_next)
    if (p->ai_family == AF_INET) {
      a = p;
      break;
    }
  Fd ls(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
  if (!ls) sys_fail("socket");
  int one = 1;
  if (::setsockopt(ls.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
    sys_fail("setsockopt(SO_REUSEADDR)");
  if (::bind(ls.get(), a->ai_addr, a->ai_addrlen) < 0) sys_fail("bind");
  if (::listen(ls.get(), 1) < 0) sys_fail("listen");
  Fd c;
  while (!c) {
    c = Fd(::accept(ls.get(), nullptr, nullptr));
    if (!c && errno != EINTR) sys_fail("accept");
  }
  set_nodelay(c);
  std::vector<char> buf(o.size);
  std::size_t n = 0;
  while (read_all(c, buf)) {
    write_all(c, buf);
    ++n;
  }
  std::printf("server: echoed %zu messages of %zu bytes\n", n, o.size);
  return 0;
}

int run_client(const Options &o) {
  AddrInfo ai(o.host.c_str(), o.port.c_str(), 0);
  Fd s;
  int err = 0;
  for (const addrinfo *a = ai.begin(); a && !s; a = a->ai_next) {
    Fd t(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (!t) continue;
    if (::connect(t.get(), a->ai_addr, a->ai_addrlen) == 0)
      s = std::move(t);
    else
      err = errno;
  }
  if (!s) {
    errno = err;
    sys_fail("connect to " + o.host + " port " + o.port);
  }
  set_nodelay(s);
  std::vector<char> out(o.size), in(o.size);
  for (std::size_t i = 0; i < o.size; ++i) out[i] = static_cast<char>(i * 7 + 1);
  std::vector<double> us;
  us.reserve(o.iters);
  for (std::size_t i = 0; i < o.warmup + o.iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    write_all(s, out);
    if (!read_all(s, in)) throw std::runtime_error("the server hung up");
    auto t1 = std::chrono::steady_clock::now();
    if (in != out) throw std::runtime_error("the echo differs from the message");
    if (i >= o.warmup)
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto rank = [&](double q) {
    // nearest rank: the smallest value with at least q of the samples <= it
    std::size_t k = static_cast<std::size_t>(q * static_cast<double>(us.size()) + 0.999999);
    return us[std::clamp<std::size_t>(k, 1, us.size()) - 1];
  };
  double avg = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  std::printf("bytes %zu iterations %zu min_us %.2f typical_us %.2f avg_us %.2f "
              "p99_us %.2f max_us %.2f\n",
              o.size, us.size(), us.front(), rank(0.5), avg, rank(0.99), us.back());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    auto o = parse(argc, argv);
    if (!o) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return o->server ? run_server(*o) : run_client(*o);
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "tcp_pingpong: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tcp_pingpong: %s\n", e.what());
    return 1;
  }
}
