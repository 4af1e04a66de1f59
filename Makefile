# SPDX-License-Identifier: GPL-2.0
#
# sroce: software RoCE v2 RDMA device (kernel module + libibverbs provider).
#
#   make                 build sroce.ko for the running kernel and the provider
#   make userspace       the provider plus the C++ tests (needs libgtest-dev)
#   make userspace-guest only what the guest suites run (provider, device
#                        tests, tools), not the host's unit tests
#   make KDIR=/path      build the module against other kernel headers
#   make ktests          the test modules the guest suites load (KDIR= too)
#   make install         install sroce.ko (updates/) and the provider (as root)
#   make deb             Debian packages sroce-dkms and sroce-provider in
#                        build/deb/ (scripts/mkdeb; Documentation/admin-guide.md)
#   make check-packages  make deb + contents and lintian checks, then the
#                        install test in a 6.1 guest (~22 min; testing.md)
#   make unit            build and run the userspace unit tests
#   make microbench      run the protocol-core micro-benchmarks (core_bench)
#   make demo            two QEMU guests with sroce devices (see README.md)
#   make check           everything CI runs; ends with "N passed, N failed, N skipped"
#   make check-debug     the guest suites on a KASAN/lockdep/kmemleak 6.1
#                        kernel (built once, cached: 1-2 h; not in CI;
#                        SUITES="device pair" limits the suites)
#   make bench           sroce vs rdma_rxe vs TCP in QEMU guests, kernel 6.1
#                        (~16 min measured; BENCH_ARGS="-k all": 6.1 and 6.12,
#                        ~38 min measured; "--quick": ~8 min, "-k all --quick":
#                        16 min measured on a loaded host; also
#                        --runs N, --profile FIGURE; Documentation/benchmarks.md)
#
# The kernel-side rules live in Kbuild.  Each kernel is built in its own
# shadow tree under build/kmod/<release>/ so builds for several kernels do not
# trample on each other's objects.

KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
PREFIX ?= /usr
W ?= 1
SROCE_GIT := $(shell git -C $(CURDIR) describe --always --dirty --tags 2>/dev/null)

krel = $(shell sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
kmod_dir = $(BUILD)/kmod/$(krel)

.PHONY: all module ktests provider userspace userspace-guest unit microbench install \
	install-module install-provider deb check-packages demo check check-debug \
	bench clean help

all: module provider

help:
	@sed -n '3,27p' Makefile

module:
	@test -n "$(krel)" || { echo "sroce: no kernel headers at $(KDIR);" \
		"install linux-headers-$(KVER) or pass KDIR=" >&2; exit 1; }
	@mkdir -p $(kmod_dir)
	@cp -rsf $(CURDIR)/Kbuild $(CURDIR)/kernel $(CURDIR)/include $(kmod_dir)/
	$(MAKE) -C $(KDIR) M=$(kmod_dir) W=$(W) SROCE_GIT=$(SROCE_GIT) modules
	@echo "sroce: built $(kmod_dir)/sroce.ko"

# Test modules the selftests load in the guests (selftests/kmod), never
# installed; built like sroce.ko in a shadow tree per kernel.
ktests:
	@test -n "$(krel)" || { echo "sroce: no kernel headers at $(KDIR)" >&2; exit 1; }
	@mkdir -p $(BUILD)/ktest/$(krel)
	@cp -rsf $(CURDIR)/selftests/kmod/. $(BUILD)/ktest/$(krel)/
	$(MAKE) -C $(KDIR) M=$(BUILD)/ktest/$(krel) W=$(W) modules

$(BUILD)/userspace/CMakeCache.txt:
	cmake -S $(CURDIR)/userspace -B $(BUILD)/userspace \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)

provider: $(BUILD)/userspace/CMakeCache.txt
	cmake --build $(BUILD)/userspace --target sroce_provider -j$(shell nproc)

userspace: $(BUILD)/userspace/CMakeCache.txt
	cmake --build $(BUILD)/userspace -j$(shell nproc)

# What the guest suites run (the provider, the device tests and tools), not
# the host's unit tests: make check starts the guests after this.  The
# target is named only after the configure step, so that runs first (a build
# tree configured before sroce_guest existed would not know it).
userspace-guest: $(BUILD)/userspace/CMakeCache.txt
	cmake -S $(CURDIR)/userspace -B $(BUILD)/userspace >/dev/null
	cmake --build $(BUILD)/userspace --target sroce_guest -j$(shell nproc)

unit: userspace
	ctest --test-dir $(BUILD)/userspace --output-on-failure

# Google Benchmark micro-benchmarks of kernel/core (needs libbenchmark-dev;
# Documentation/benchmarks.md).  JSON goes to $(BUILD)/bench/core_bench.json,
# the table to the terminal.  MICROBENCH_ARGS adds core_bench options, e.g.
# MICROBENCH_ARGS='--benchmark_filter=icrc --benchmark_repetitions=5'.
MICROBENCH_ARGS ?=
microbench: $(BUILD)/userspace/CMakeCache.txt
	@test -f $(BUILD)/userspace/bench/Makefile || { echo "sroce:" \
		"core_bench is not configured: install libbenchmark-dev" \
		"(scripts/install-deps.sh), then run cmake $(BUILD)/userspace" >&2; \
		exit 1; }
	cmake --build $(BUILD)/userspace --target core_bench -j$(shell nproc)
	@mkdir -p $(BUILD)/bench
	$(BUILD)/userspace/bench/core_bench \
		--benchmark_out=$(BUILD)/bench/core_bench.json \
		--benchmark_out_format=json $(MICROBENCH_ARGS)
	@echo "sroce: results in $(BUILD)/bench/core_bench.json"

install: install-module install-provider

install-module: module
	$(MAKE) -C $(KDIR) M=$(kmod_dir) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(krel)

install-provider: provider
	cmake --install $(BUILD)/userspace

deb:
	$(CURDIR)/scripts/mkdeb --lintian

check-packages:
	$(CURDIR)/scripts/check-packages

demo:
	$(CURDIR)/scripts/demo

check:
	$(CURDIR)/scripts/check

check-debug:
	$(CURDIR)/scripts/check-debug $(SUITES)

bench:
	$(CURDIR)/scripts/bench $(BENCH_ARGS)

clean:
	rm -rf $(BUILD)
