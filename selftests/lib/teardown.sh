#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The last KTAP case of every guest suite: nothing the suite did is left
# behind.  t_teardown_clean
#  - waits for the peer in a two-guest suite, so that its last traffic is over;
#  - deletes every RDMA link (each delete must succeed), and no link remains;
#  - with sroce loaded: every count of its debugfs objects file goes back to
#    0 (devices, contexts, PDs, MRs, QPs, CQs, ...; a missing file is a
#    failure);
#  - unloads the RDMA driver (sroce, rdma_rxe: whichever is loaded), which
#    must succeed and leave no module behind (rdma_rxe has no object counts:
#    its module's reference count is its check);
#  - where the kernel has kmemleak (the debug kernel; the stock 6.1 and 6.12
#    have none, and the case says so), scans for leaks and fails on a leak
#    whose allocation went through an RDMA module, or through a module no
#    longer loaded (an address without a symbol).
# Source after ktap.sh (and scripts/guest/lib.sh in two-guest suites), and
# list t_teardown_clean last in ktap_main.

TD_OBJS=/sys/kernel/debug/sroce/objects
TD_KMEMLEAK=/sys/kernel/debug/kmemleak
# kmemleak reports an object only once it is this old (its MSECS_MIN_AGE)
TD_KMEMLEAK_AGE=5

td_links() {
	rdma link show 2>/dev/null | awk '{ print $2 }' | cut -d/ -f1 | sort -u
}

td_objects_nonzero() {
	awk '$2 != 0 { printf "%s%s %s", sep, $1, $2; sep = ", " }' "$TD_OBJS"
}

td_kmemleak_scan() {
	echo scan >"$TD_KMEMLEAK" || fail "kmemleak scan failed"
}

# td_kmemleak_check: the leaks kmemleak suspects, failing on an RDMA one
td_kmemleak_check() {
	local report
	if [ ! -e "$TD_KMEMLEAK" ]; then
		echo "no $TD_KMEMLEAK: this kernel has no kmemleak, not scanned"
		return 0
	fi
	# twice, TD_KMEMLEAK_AGE apart: kmemleak's minimum age, not a state
	td_kmemleak_scan
	sleep "$TD_KMEMLEAK_AGE"
	td_kmemleak_scan
	report=$(cat "$TD_KMEMLEAK")
	if [ -z "$report" ]; then
		echo "kmemleak: no suspected leaks"
		return 0
	fi
	printf '%s\n' "$report"
	! printf '%s\n' "$report" |
		grep -Eq '\[(sroce|rdma_rxe|ib_core|ib_uverbs|ib_cm|iw_cm|rdma_cm|rdma_ucm|nvme_rdma|nvmet_rdma|rpcrdma|ib_srp|ib_srpt|ib_iser|ib_isert)\]|\] 0xffffffff' ||
		fail "kmemleak: leaks through an RDMA module (above)"
	echo "kmemleak: the suspected leaks above are outside the RDMA stack"
}

# td_delete_links LINK...: delete each (each must succeed)
td_delete_links() {
	local d
	for d in "$@"; do
		timeout $((60 * SLOW)) rdma link delete "$d" ||
			fail "rdma link delete $d failed or blocked"
	done
}

t_teardown_clean() {
	local m left
	if [ "${SROCE_GUESTS:-1}" = 2 ]; then
		# the peer may still run its one-sided cases: pair's verbs cases
		# in guest a took 22 minutes on the debug kernel.  A peer that
		# ends is noticed at once (tb_peer_done), one that hangs by the
		# test bed's time limit.
		tb_barrier "$KTAP_CASE" 900 || fail "the peer did not get to its teardown"
	fi
	if [ -n "${SROCE_NETNS:-}" ]; then
		# both roles in one kernel (the test bed's --netns): each deletes
		# its own device; the module and its objects are role a's to check
		# once role b's device is gone too (pair.sh's role b deleted its
		# own before the verbs cases)
		td_delete_links $(td_links | grep -Fx "$SROCE_RDMA_DEV")
		if [ "$SROCE_ROLE" = b ]; then
			echo "$SROCE_RDMA_DEV deleted; guest a checks the kernel both roles share"
			return 0
		fi
		wait_until $((60 * SLOW)) '[ -z "$(td_links)" ]' ||
			fail "links left after both roles deleted theirs: $(rdma link show)"
	fi
	td_delete_links $(td_links)
	wait_until 30 '[ -z "$(td_links)" ]' || fail "links left: $(rdma link show)"
	echo "links deleted"
	if [ -d /sys/module/sroce ]; then
		[ -r "$TD_OBJS" ] || fail "sroce is loaded and $TD_OBJS is missing"
		wait_until 30 '[ -z "$(td_objects_nonzero)" ]' ||
			fail "sroce objects left with no device: $(td_objects_nonzero)"
		echo "sroce objects all 0: $(tr '\n' ' ' <"$TD_OBJS")"
	fi
	for m in sroce rdma_rxe; do
		[ -d "/sys/module/$m" ] || continue
		left=$(timeout $((60 * SLOW)) rmmod "$m" 2>&1) ||
			fail "rmmod $m failed: $left (refcount $(cat "/sys/module/$m/refcnt" 2>/dev/null))"
		[ ! -d "/sys/module/$m" ] || fail "$m still loaded after rmmod"
		echo "$m unloaded"
	done
	td_kmemleak_check
}
