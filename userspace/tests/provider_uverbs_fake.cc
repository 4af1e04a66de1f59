// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The entry points the provider tests interpose (see
// provider_uverbs_fake.h): the provider's registration, and write(),
// ioctl(), mmap() and munmap() of the fake kernel's descriptor and rings.
#include <dlfcn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>

#include "provider_uverbs_fake.h"
#include "provider_uverbs_fake_ioctl.h"

using sroce_provider_test::active_fake;
using sroce_provider_test::active_ioctl;
using sroce_provider_test::real_write;
using sroce_provider_test::registered;

extern "C" void verbs_register_driver_34(const verbs_device_ops *ops)
{
	registered.push_back(ops);
}

extern "C" ssize_t write(int fd, const void *buf, size_t len)
{
	if (active_fake && active_fake->owns(fd))
		return active_fake->handle(buf, len);
	return real_write()(fd, buf, len);
}

// ioctl() of the fake's descriptor goes to its ioctl() half, if the test
// made one (provider_uverbs_fake_ioctl.h); without it, to /dev/null's,
// which fails with ENOTTY.
extern "C" int ioctl(int fd, unsigned long request, ...)
{
	using RealIoctl = int (*)(int, unsigned long, ...);
	static const auto real = reinterpret_cast<RealIoctl>(
		dlsym(RTLD_NEXT, "ioctl"));
	va_list ap;

	va_start(ap, request);
	void *const arg = va_arg(ap, void *);
	va_end(ap);
	if (active_fake && active_fake->owns(fd) && active_ioctl)
		return active_ioctl->handle(request, arg);
	return real(fd, request, arg);
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
