// A file descriptor closed on destruction, for the device tests and tools.
#ifndef SROCE_TESTS_FD_H
#define SROCE_TESTS_FD_H

#include <unistd.h>

#include <utility>

namespace sroce::test {

class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	Fd(Fd &&o) noexcept : fd_(o.release()) {}
	Fd &operator=(Fd &&o) noexcept
	{
		std::swap(fd_, o.fd_);
		return *this;
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd() { reset(); }
	int get() const { return fd_; }
	int release() { return std::exchange(fd_, -1); }
	void reset(int fd = -1)
	{
		if (fd_ >= 0)
			close(fd_);
		fd_ = fd;
	}

private:
	int fd_;
};

} // namespace sroce::test

#endif
