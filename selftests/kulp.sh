#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What kernel ULPs (NVMe-oF, NFS/RDMA) need beyond user verbs, exercised by
# a test module (selftests/kmod, built by "make ktests") against the device
# the test bed set up: fast-register MRs (ib_alloc_mr, ib_map_mr_sg,
# IB_WR_REG_MR) used for RDMA across a page boundary, a SEND_WITH_INV that
# invalidates them, a second registration under the next key byte, and
# LOCAL_INV; a kernel CQ whose QP is destroyed and its number reused; and a
# kernel SRQ resized with receives posted.
# Until rdma_cm works the module connects two RC QPs of the one device
# itself.  Emits KTAP.

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
OBJS=/sys/kernel/debug/sroce/objects
KDIR_T=${SROCE_BUILD:-$SROCE_SRC/build}/ktest/$(uname -r)

objects() {		# KIND -> live count from debugfs
	awk -v k="$1" '$1 == k { print $2 }' "$OBJS"
}

# ktest_load NAME STEPS [ARGS...]: load the test module NAME.ko (it runs
# its steps at load time and fails to load if one failed), show its log,
# expect STEPS steps passed, unload it, and find as many QPs and MRs as
# before (and as many SRQs and rings).
ktest_load() {
	local name=$1 steps=$2 ko=$KDIR_T/$1.ko mrs qps srqs rings
	shift 2
	[ -f "$ko" ] || fail "$ko not built (make ktests KDIR=...)"
	mrs=$(objects mrs)
	qps=$(objects qps)
	srqs=$(objects srqs)
	rings=$(objects rings)
	if ! insmod "$ko" dev="$DEV" "$@"; then
		dmesg_since_case | grep "$name"
		fail "$name: a step failed"
	fi
	dmesg_since_case | grep "$name"
	expect_eq "$(dmesg_since_case | grep -c "$name: ok ")" "$steps" \
		"steps passed"
	rmmod "$name"
	expect_eq "$(objects mrs)" "$mrs" "MRs after the test"
	expect_eq "$(objects qps)" "$qps" "QPs after the test"
	expect_eq "$(objects srqs)" "$srqs" "SRQs after the test"
	expect_eq "$(objects rings)" "$rings" "rings after the test"
}

t_fast_reg_mr() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	ktest_load sroce_frmr_test 8
}

# A completion a destroyed kernel QP left in a shared CQ never names the QP
# that reuses its number (selftests/kmod/sroce_cq_reuse_test.c).
t_cq_outlives_reused_qpn() {
	ktest_load sroce_cq_reuse_test 6
}

# READs through a fast-register MR that another QP keeps invalidating and
# re-registering return the region's bytes or a remote access error, never
# other bytes (selftests/kmod/sroce_frmr_race_test.c).
t_fast_reg_races_reads() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	ktest_load sroce_frmr_race_test 4
}

# A kernel SRQ grows with receives posted, refuses to shrink below them,
# and is resized while they are consumed; every message lands in order
# (selftests/kmod/sroce_srq_resize_test.c).
t_kernel_srq_resize() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	ktest_load sroce_srq_resize_test 7
}

ktap_main t_fast_reg_mr t_cq_outlives_reused_qpn t_fast_reg_races_reads \
	t_kernel_srq_resize t_teardown_clean
