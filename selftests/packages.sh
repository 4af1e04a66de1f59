#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install test of the Debian packages (make deb) in one guest: dpkg -i of
# sroce-dkms and sroce-provider, DKMS builds sroce.ko for the running
# kernel into updates/dkms, modprobe loads that module, "rdma link add"
# and ibv_devinfo work with the installed provider only, and dpkg -P
# removes module, DKMS tree and provider again.
#
# The test bed's own module (updates/sroce.ko) and provider entry
# (/etc/libibverbs.d/sroce.driver pointing into the build tree) are removed
# first, so nothing of the build tree is used.  All changes land in the
# guest's tmpfs overlay.  Runs inside a test-bed guest started with
# --no-link (scripts/check-packages); needs build/deb/*.deb (make deb) and
# the running kernel's headers on the host.  Emits KTAP on stdout.

. "$(dirname "$0")/lib/ktap.sh"

IF=${SROCE_NETDEV:?run me through scripts/testbed}
KVER=$(uname -r)
DEB=${SROCE_BUILD:?run me through scripts/testbed}/deb
MODS=/lib/modules/$KVER
PROVIDER_DIR=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)/libibverbs
PROVIDER=$PROVIDER_DIR/libsroce-rdmav34.so
unset RDMAV_DRIVERS IBV_CONFIG_DIR RDMAV_HUGEPAGES_SAFE

debs() {		# the two packages to install (sroce-provider-dbgsym_* not)
	local f
	for f in "$DEB"/sroce-dkms_*_all.deb "$DEB"/sroce-provider_*.deb; do
		[ -f "$f" ] && echo "$f"
	done
	return 0
}

t_prepare() {
	local n
	n=$(debs | wc -l)
	expect_eq "$n" 2 "packages in $DEB (run make deb first)"
	! dpkg-query -W sroce-dkms sroce-provider 2>/dev/null ||
		fail "sroce packages already installed in the guest's root"
	[ ! -d /sys/module/sroce ] || rmmod sroce
	# the test bed's build-tree module and provider entry
	rm -f "$MODS/updates/sroce.ko" /etc/libibverbs.d/sroce.driver
	depmod -a "$KVER"
	must_fail modinfo -n sroce
	# the test bed bind-mounts its own module tree on /lib/modules/$KVER:
	# point its build link at the host's headers, as linux-headers does
	[ -e "$MODS/build/Makefile" ] || ln -sfn "/usr/src/linux-headers-$KVER" "$MODS/build"
	[ -f "$MODS/build/Makefile" ] || fail "no headers for $KVER on the host"
}

t_install() {
	# shellcheck disable=SC2046
	dpkg -i $(debs)
	dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' sroce-dkms sroce-provider
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}' sroce-dkms)" = "ii " ] || fail "sroce-dkms not installed"
	[ "$(dpkg-query -W -f='${db:Status-Abbrev}' sroce-provider)" = "ii " ] || fail "sroce-provider not installed"
}

t_dkms_built() {
	dkms status sroce
	expect_match "$(dkms status sroce -k "$KVER")" "installed" "dkms status for $KVER"
	[ -f "$MODS/updates/dkms/sroce.ko" ] || fail "no $MODS/updates/dkms/sroce.ko"
	expect_eq "$(modinfo -n sroce)" "$MODS/updates/dkms/sroce.ko" "module modprobe finds"
}

t_modprobe() {
	modprobe sroce
	[ -d /sys/module/sroce ] || fail "sroce not loaded"
	modinfo -F version sroce || true
}

t_link_add() {
	rdma link add sroce0 type sroce netdev "$IF"
	expect_match "$(rdma link show sroce0/1)" "netdev $IF" "rdma link show"
}

t_ibv_devinfo_installed_provider() {
	local out
	expect_eq "$(cat /etc/libibverbs.d/sroce.driver)" "driver sroce" "packaged driver entry"
	[ -f "$PROVIDER" ] || fail "no $PROVIDER"
	# LD_DEBUG=files: which provider file libibverbs really opened
	out=$(LD_DEBUG=files ibv_devinfo -d sroce0 2>&1)
	echo "$out" | grep -v '^ *[0-9]*:' || true
	expect_match "$out" "file=$PROVIDER " "provider loaded from the package"
	expect_match "$out" "hca_id:[[:space:]]+sroce0" "ibv_devinfo device"
	expect_match "$out" "PORT_ACTIVE" "port state"
	! echo "$out" | grep -q "$SROCE_BUILD" || fail "something of the build tree was loaded"
}

t_link_delete_unload() {
	rdma link delete sroce0
	rmmod sroce
	[ ! -d /sys/module/sroce ] || fail "sroce still loaded"
}

t_purge() {
	dpkg -P sroce-provider sroce-dkms
	! dpkg-query -W -f='${db:Status-Abbrev}\n' sroce-dkms sroce-provider 2>/dev/null | grep -q '^i' ||
		fail "packages still installed"
	[ ! -e "$MODS/updates/dkms/sroce.ko" ] || fail "module left in updates/dkms"
	must_fail modinfo -n sroce
	[ ! -e /var/lib/dkms/sroce ] || fail "DKMS tree left: $(ls -R /var/lib/dkms/sroce)"
	ls -d /usr/src/sroce-* 2>/dev/null && fail "module source left in /usr/src"
	[ ! -e "$PROVIDER" ] || fail "provider left"
	[ ! -e /etc/libibverbs.d/sroce.driver ] || fail "driver entry left"
}

ktap_main \
	t_prepare \
	t_install \
	t_dkms_built \
	t_modprobe \
	t_link_add \
	t_ibv_devinfo_installed_provider \
	t_link_delete_unload \
	t_purge
