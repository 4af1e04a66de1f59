#!/bin/bash
# scripts/install-deps.sh - install everything sroce needs on Debian 12.
#
# Idempotent; run as root (or as a user with sudo).  It
#   - adds bookworm-backports (/etc/apt/sources.list.d/sroce-backports.sources)
#     unless a backports source is configured already (the 6.12 test kernel
#     and its headers come from there),
#   - installs (--no-install-recommends) the build, test bed, RDMA and
#     fuzzing tools and the headers of both test kernels (names resolved by
#     scripts/kernels.sh, they change with every kernel ABI bump),
#   - installs QEMU from bookworm-backports when the one installed is older
#     than 8.1 (bookworm's 7.2 corrupts TCG guests under network load, see
#     Documentation/testbed.md),
#   - returns quickly without touching apt when everything is installed.
#
# Usage: scripts/install-deps.sh [--check] [--prepare-testbed] [--debug-kernel]
#   --check            only report what is missing (exit 1 if anything is)
#   --debug-kernel     also what make check-debug builds its kernel from:
#                      linux-source-6.1 and the kernel build tools
#   --prepare-testbed  afterwards also download/extract the guest kernels and
#                      build the initramfs (scripts/testbed --prepare -k all),
#                      as the user running this script
set -euo pipefail

here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source=scripts/kernels.sh
. "$here/kernels.sh"

CHECK_ONLY=0
PREPARE=0
DEBUG_KERNEL=0
for a in "$@"; do
	case "$a" in
	--check) CHECK_ONLY=1 ;;
	--debug-kernel) DEBUG_KERNEL=1 ;;
	--prepare-testbed) PREPARE=1 ;;
	-h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) echo "install-deps: unknown argument '$a' (try --help)" >&2; exit 2 ;;
	esac
done

say() { printf 'install-deps: %s\n' "$*"; }

export DEBIAN_FRONTEND=noninteractive
export SROCE_KERNELS_STRICT=1    # kernel names from apt only, no guessing

SUDO=
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -E"
	elif [ "$CHECK_ONLY" = 0 ]; then
		say "error: not root and sudo is not available" >&2
		exit 1
	fi
fi

PACKAGES=(
	# test bed: initramfs, guest module handling (QEMU: step 4)
	busybox-static kmod cpio xz-utils zstd util-linux
	# network / RDMA user space (guests run the host's user space: what tests
	# call inside a guest must be installed here): rdmacm-utils has rping,
	# ucmatose, udaddy, mckey (selftests/cm.sh, interop.sh); tshark brings
	# dumpcap (wireshark-common, whose debconf question about non-root
	# capture takes its default under DEBIAN_FRONTEND=noninteractive)
	iproute2 iputils-ping procps ethtool rdma-core ibverbs-utils rdmacm-utils perftest ibverbs-providers
	libibverbs-dev librdmacm-dev tshark iperf3
	# middleware over RDMA (selftests/middleware.sh): UCX's ucx_perftest,
	# Open MPI (mpirun; libopenmpi-dev builds sroce_mpi_check), libfabric's
	# fi_pingpong
	ucx-utils openmpi-bin libopenmpi-dev libfabric-bin
	# NFS over RDMA (selftests/ulp.sh): rpc.nfsd, rpc.mountd, exportfs,
	# mount.nfs, rpcbind; their services are not started here (below)
	nfs-kernel-server nfs-common rpcbind
	# kernel storage over RDMA (selftests/ulp.sh): open-iscsi's iscsiadm and
	# iscsid for the iSER initiator (the test starts iscsid in the guest;
	# nothing here needs its service running on the host)
	open-iscsi
	# build
	build-essential cmake pkg-config python3
	# make deb: Debian packaging tools (scripts/mkdeb)
	debhelper dh-dkms dkms lintian fakeroot dpkg-dev
	# unit tests, benchmarks
	libgtest-dev googletest libbenchmark-dev
	# make bench: the chart; perf for scripts/bench --profile (bookworm's
	# linux-perf is perf 6.1; the guests run it on 6.1 and 6.12 alike)
	gnuplot-nox linux-perf
	# fuzzing
	clang llvm lld
)
# make check-debug only: the debug guest kernel (scripts/debug-kernel/build)
[ "$DEBUG_KERNEL" = 1 ] && PACKAGES+=(linux-source-6.1 flex bison bc libelf-dev libssl-dev)

# Packages whose maintainer scripts start a service: on a host without
# systemd, invoke-rc.d runs their init scripts, which start daemons on this
# host (rpcbind, rpc.statd) or fail the install (nfs-common's and rpcbind's
# postinst exit 1 when their init script fails).  The guests start what they
# need themselves, so the install runs with a policy-rc.d that forbids
# every start (deb-systemd-invoke obeys it too), unless the host has one.
NO_START=(nfs-kernel-server nfs-common rpcbind)
POLICY_RC_D=/usr/sbin/policy-rc.d

# missing PKG...: print the packages that are not installed (one dpkg-query)
missing() {
	local p
	declare -A ok=()
	while read -r st p; do
		[ "${st:0:2}" = ii ] && ok[${p%%:*}]=1
	done < <(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' "$@" 2>/dev/null || true)
	for p in "$@"; do
		[ -n "${ok[$p]:-}" ] || printf '%s\n' "$p"
	done
}

has_backports() {
	grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

updated=0
apt_update() {
	[ "$updated" = 1 ] && return 0
	say "apt-get update"
	$SUDO apt-get update -q
	updated=1
}

# ---- 1. backports source
if ! has_backports; then
	if [ "$CHECK_ONLY" = 1 ]; then
		say "missing: a bookworm-backports apt source"
	else
		say "adding bookworm-backports as /etc/apt/sources.list.d/sroce-backports.sources"
		$SUDO tee /etc/apt/sources.list.d/sroce-backports.sources >/dev/null <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		apt_update
	fi
fi

# ---- 2. kernel headers of both test kernels
resolve_headers() {
	HEADERS=()
	local s h
	for s in $SROCE_KERNEL_SERIES; do
		h=$(sroce_headers_pkg "$s" 2>/dev/null) || return 1
		HEADERS+=("$h")
	done
}
if ! resolve_headers; then
	if [ "$CHECK_ONLY" = 1 ]; then
		say "cannot resolve the test kernels (apt lists without backports?)"
		exit 1
	fi
	apt_update
	resolve_headers || { say "error: cannot resolve the test kernels even after apt-get update" >&2; exit 1; }
fi

# ---- 3. install what is missing
mapfile -t MISSING < <(missing "${PACKAGES[@]}" "${HEADERS[@]}")
if [ "${#MISSING[@]}" -eq 0 ]; then
	say "all ${#PACKAGES[@]} packages and the headers (${HEADERS[*]}) are installed; nothing to do"
elif [ "$CHECK_ONLY" = 1 ]; then
	say "missing: ${MISSING[*]}"
	exit 1
else
	say "missing: ${MISSING[*]}"
	apt_update
	# the update may have moved the kernel ABI: resolve again
	resolve_headers
	mapfile -t MISSING < <(missing "${PACKAGES[@]}" "${HEADERS[@]}")
	if [ "${#MISSING[@]}" -gt 0 ]; then
		if [ -n "$(missing "${NO_START[@]}")" ] && [ ! -e "$POLICY_RC_D" ]; then
			say "no services start during the install: a temporary $POLICY_RC_D (exit 101)"
			trap '$SUDO rm -f "$POLICY_RC_D"' EXIT
			printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts (removed after apt-get)\nexit 101\n' |
				$SUDO tee "$POLICY_RC_D" >/dev/null
			$SUDO chmod 755 "$POLICY_RC_D"
		fi
		say "apt-get install --no-install-recommends ${MISSING[*]}"
		$SUDO apt-get install -y -q --no-install-recommends "${MISSING[@]}"
		if [ "$(trap -p EXIT)" ]; then
			$SUDO rm -f "$POLICY_RC_D"
			trap - EXIT
		fi
	fi
	say "done"
fi
# ---- 4. the emulator: a QEMU whose multi-threaded TCG locks pages during
# translation (8.1 and later, bookworm-backports): with bookworm's 7.2,
# guests under network load crash now and then with corrupted registers
# and stacks (Documentation/testbed.md)
QEMU_MIN=1:8.1
qemu_version() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Version}' qemu-system-x86 2>/dev/null |
		sed -n 's/^ii *//p'
}
if ! dpkg --compare-versions "$(qemu_version)" ge "$QEMU_MIN"; then
	if [ "$CHECK_ONLY" = 1 ]; then
		say "missing: qemu-system-x86 >= $QEMU_MIN (installed: $(qemu_version || true)); bookworm-backports has it"
		exit 1
	fi
	apt_update
	say "apt-get install --no-install-recommends -t bookworm-backports qemu-system-x86 (installed: $(qemu_version))"
	$SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports qemu-system-x86
	dpkg --compare-versions "$(qemu_version)" ge "$QEMU_MIN" ||
		{ say "error: qemu-system-x86 $(qemu_version) is older than $QEMU_MIN" >&2; exit 1; }
fi
say "qemu-system-x86 $(qemu_version)"
for s in $SROCE_KERNEL_SERIES; do
	say "kernel $s: $(sroce_kver "$s") (headers in $(sroce_kdir "$s"))"
done

# ---- 5. optional: warm the test bed cache
if [ "$PREPARE" = 1 ] && [ "$CHECK_ONLY" = 0 ]; then
	say "preparing the test bed (guest kernels, initramfs)"
	"$here/testbed" --prepare -k all
fi
