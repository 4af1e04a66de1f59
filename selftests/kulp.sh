#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What kernel ULPs (NVMe-oF, NFS/RDMA) need beyond user verbs, exercised by
# a test module (selftests/kmod, built by "make ktests") against the device
# the test bed set up: fast-register MRs (ib_alloc_mr, ib_map_mr_sg,
# IB_WR_REG_MR) used for RDMA across a page boundary, a SEND_WITH_INV that
# invalidates them, a second registration under the next key byte, and
# LOCAL_INV; and a kernel CQ whose QP is destroyed and its number reused.
# Until rdma_cm works the module connects two RC QPs of the one device
# itself.  Emits KTAP.

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
OBJS=/sys/kernel/debug/sroce/objects
KDIR_T=${SROCE_BUILD:-$SROCE_SRC/build}/ktest/$(uname -r)
KO=$KDIR_T/sroce_frmr_test.ko

objects() {		# KIND -> live count from debugfs
	awk -v k="$1" '$1 == k { print $2 }' "$OBJS"
}

t_fast_reg_mr() {
	[ -f "$KO" ] || skip "$KO not built (make ktests KDIR=...)"
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	local mrs qps
	mrs=$(objects mrs)
	qps=$(objects qps)
	if ! insmod "$KO" dev="$DEV"; then
		dmesg_since_case | grep sroce_frmr_test
		fail "the fast-register steps failed"
	fi
	dmesg_since_case | grep sroce_frmr_test
	expect_eq "$(dmesg_since_case | grep -c 'sroce_frmr_test: ok ')" 7 \
		"steps passed"
	rmmod sroce_frmr_test
	expect_eq "$(objects mrs)" "$mrs" "MRs after the test"
	expect_eq "$(objects qps)" "$qps" "QPs after the test"
}

# A completion a destroyed kernel QP left in a shared CQ never names the QP
# that reuses its number (selftests/kmod/sroce_cq_reuse_test.c).
t_cq_outlives_reused_qpn() {
	local ko=$KDIR_T/sroce_cq_reuse_test.ko qps
	[ -f "$ko" ] || fail "$ko not built (make ktests KDIR=...)"
	qps=$(objects qps)
	if ! insmod "$ko" dev="$DEV"; then
		dmesg_since_case | grep sroce_cq_reuse_test
		fail "the CQ/QPN reuse steps failed"
	fi
	dmesg_since_case | grep sroce_cq_reuse_test
	expect_eq "$(dmesg_since_case | grep -c 'sroce_cq_reuse_test: ok ')" 6 \
		"steps passed"
	rmmod sroce_cq_reuse_test
	expect_eq "$(objects qps)" "$qps" "QPs after the test"
}

ktap_main t_fast_reg_mr t_cq_outlives_reused_qpn t_teardown_clean
