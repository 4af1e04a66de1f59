#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel RDMA users between two guests: NVMe over Fabrics on RDMA, the
# kernel's own rdma_cm, fast-register MRs, SEND_WITH_INVALIDATE and local
# invalidation.  Guest a exports a RAM disk namespace with nvmet-rdma;
# guest b connects with nvme-rdma (through /dev/nvme-fabrics, no nvme-cli
# needed), writes random data with O_DIRECT, reads it back and compares;
# the controller then lives through a target restart, a link flap and 2%
# loss during I/O, its data verified each time, and is deleted under load
# with the device's resources back to their counts before it connected.
# Then the same again (without the trouble) with the target's receives on
# shared receive queues (nvmet-rdma use_srq=1), the kernel's ib_post_srq_recv
# path.  Then SCSI over RDMA through LIO targets on the same RAM disk: SRP
# (ib_srpt, ib_srp logging in through rdma_cm) and iSER (an iSCSI portal
# with iSER, ib_isert; open-iscsi's iscsiadm and ib_iser), each written,
# read back and compared the same way, then logged out and torn down with
# the device's resources back to what they were.  Then NFS over RDMA:
# guest a runs the kernel's nfsd with an RDMA listener on port 20049
# exporting a tmpfs, guest b mounts it with NFSv3 and NFSv4.2 over RDMA,
# writes and reads back random data with O_DIRECT and through the page
# cache, and both check that the bytes crossed the RDMA port; then the
# server stops and the device's objects go back to their counts before.
# Last, RDS over RDMA (rds_rdma): guest a runs an echo server on an RDS
# socket of the IB transport bound to its IPv4 address, guest b pings it
# with messages of 1 B to 64 KiB (sroce_rds_ping, every byte checked); both
# find RDS's rdma_cm ID and RC QP on the device and its port's packet
# counters risen, and after rmmod rds_rdma rds nothing of it is left.
# Emits KTAP.  The NVMe-oF cases and what several cases share are here, the
# NVMe-oF cases with trouble in lib/ulp_nvmf.sh, the SRP and iSER cases in
# lib/ulp_scsi.sh, the NFS cases in lib/ulp_nfs.sh, the RDS case in
# lib/ulp_rds.sh.
#
#   scripts/testbed -k 6.1 -n 2 selftests/ulp.sh                 # sroce
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/ulp.sh     # the reference
#   scripts/testbed -k 6.1 -n 2 selftests/ulp.sh t_srp_target_listens \
#           t_srp_login_write_read t_srp_logout   # some cases (+ setup, teardown)
#   scripts/testbed -k 6.1 -n 2 selftests/ulp.sh t_rds_ping

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/teardown.sh"
. "$(dirname "$0")/lib/netem.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
IF=${SROCE_NETDEV:?run me through scripts/testbed}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "ulp.sh needs two guests (-n 2)" >&2; exit 2; }

NQN=nqn.2026-11.org.sroce:ulp-test
CFS=/sys/kernel/config/nvmet
IMG=/dev/ram0
MIB=32
# the host's controller keeps reconnecting every second for this long
# after it loses its target (lib/ulp_nvmf.sh's cases need it)
NVMF_LOSS_TMO=$((60 * SLOW))

# The block device of the controller connected to NQN, if any.
host_disk() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$NQN" ] || continue
		ls "$c" | grep -m1 '^nvme[0-9]*n[0-9]*$' && return 0
		ls /sys/block | grep -m1 "^${c##*/}n" && return 0
	done
	return 1
}

# The sysfs directory of the controller connected to NQN, if any
nvmf_ctrl() {
	local c n
	for c in /sys/class/nvme/nvme*; do
		read -r n 2>/dev/null <"$c/subsysnqn" || continue
		[ "$n" = "$NQN" ] || continue
		echo "$c"
		return 0
	done
	return 1
}

t_setup() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	ping -c 1 -W $((10 * SLOW)) "$SROCE_PEER_IP4" >/dev/null || fail "no IPv4 path to the peer"
	if [ "$SROCE_ROLE" = a ]; then
		modprobe nvmet-rdma || fail "modprobe nvmet-rdma"
		mountpoint -q /sys/kernel/config ||
			mount -t configfs none /sys/kernel/config ||
			fail "cannot mount configfs"
	else
		modprobe nvme-rdma || fail "modprobe nvme-rdma"
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
}

# Guest a's side of t_*_target_listens: the RAM disk (the guest's tmpfs takes
# no O_DIRECT) exported as namespace 1 of NQN on an RDMA port.
target_up() {
	modprobe brd rd_nr=1 rd_size=$((MIB * 1024)) || fail "modprobe brd"
	mkdir "$CFS/subsystems/$NQN" || fail "mkdir subsystem"
	echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host"
	mkdir "$CFS/subsystems/$NQN/namespaces/1"
	echo "$IMG" >"$CFS/subsystems/$NQN/namespaces/1/device_path"
	echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable" ||
		fail "namespace not enabled"
	mkdir "$CFS/ports/1"
	echo rdma >"$CFS/ports/1/addr_trtype"
	echo ipv4 >"$CFS/ports/1/addr_adrfam"
	echo "$SROCE_IP4" >"$CFS/ports/1/addr_traddr"
	echo 4420 >"$CFS/ports/1/addr_trsvcid"
	ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN" ||
		fail "the RDMA port refused the subsystem: $(dmesg | tail -3)"
}

# (guest b has nothing to check until it connects: one-sided)  The device's
# resources with the target listening and no host connected are what
# t_nvmf_disconnect_under_load compares with.
t_nvmf_target_listens() {
	if [ "$SROCE_ROLE" = a ]; then
		target_up
	fi
	ulp_resources_save
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	only_in_guest a
}

# Guest b's side of t_nvmf_connect_write_read.
nvmf_write_read() {
	local disk=
	echo "transport=rdma,traddr=$SROCE_PEER_IP4,trsvcid=4420,nqn=$NQN,reconnect_delay=1,ctrl_loss_tmo=$NVMF_LOSS_TMO" \
		>/dev/nvme-fabrics ||
		fail "connect refused: $(dmesg | grep -i nvme | tail -3)"
	wait_until 120 'disk=$(host_disk) && [ "$(cat /sys/block/$disk/size)" != 0 ]' ||
		fail "no namespace appeared"
	echo "namespace: /dev/$disk"
	disk_write_read "$disk"
}

# disk_write_read DISK: MIB MiB of random data written to /dev/DISK with
# O_DIRECT, read back and compared, 4 KiB I/Os at odd offsets too; publishes
# the data's checksum for target_has_host_data.
disk_write_read() {
	local disk=$1
	expect_eq "$(( $(cat /sys/block/$disk/size) * 512 ))" \
		$((MIB * 1024 * 1024)) "size of /dev/$disk"
	head -c $((MIB * 1024 * 1024)) /dev/urandom >/tmp/ulp-data
	dd if=/tmp/ulp-data of=/dev/$disk bs=1M oflag=direct status=none ||
		fail "write failed"
	dd if=/dev/$disk of=/tmp/ulp-back bs=1M iflag=direct status=none ||
		fail "read failed"
	cmp /tmp/ulp-data /tmp/ulp-back || fail "read back other data"
	# small I/Os at odd offsets too
	dd if=/tmp/ulp-data of=/dev/$disk bs=4k seek=7 skip=7 count=3 \
		oflag=direct conv=notrunc status=none || fail "4k write"
	dd if=/dev/$disk of=/tmp/ulp-4k bs=4k skip=7 count=3 iflag=direct \
		status=none || fail "4k read"
	cmp /tmp/ulp-4k <(dd if=/tmp/ulp-data bs=4k skip=7 count=3 status=none) ||
		fail "4k read back other data"
	tb_put "$KTAP_CASE.sum" "$(sha256sum </tmp/ulp-data)"
}

# Guest a's side of the write/read cases: what guest b wrote (and read back)
# is on the target's RAM disk, its first N MiB (default MIB).
target_has_host_data() {
	local want got n=${1:-$MIB}
	want=$(tb_get "$KTAP_CASE.sum" 10) || fail "guest b published no checksum: its I/O failed"
	got=$(dd if=$IMG bs=1M count="$n" iflag=direct status=none | sha256sum)
	expect_eq "$got" "$want" "checksum of $IMG on the target"
}

# ulp_target_check [MIB]: the end of a case in which guest b wrote MIB
# (default MIB) to the target: guest a checks that its RAM disk holds b's
# data, and neither guest leaves the case before a has read it, as b's
# next case may write there again (the NVMe-oF cases do, at once).  a's
# check runs in a subshell, so that its failure still reaches the barrier.
ulp_target_check() {
	local rc=0
	[ "$SROCE_ROLE" = b ] || (target_has_host_data "$@") || rc=$?
	tb_barrier "$KTAP_CASE.checked" 120 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "the target does not hold guest b's data (above)"
}

t_nvmf_connect_write_read() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		(nvmf_write_read)
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	ulp_target_check
	[ "$rc" = 0 ] || fail "NVMe-oF I/O failed"
}

# The SRQs of the device in this guest: rdma_rxe's count from the rdma tool,
# sroce's from its debugfs object counts.
srq_count() {
	if [ -r /sys/kernel/debug/sroce/objects ]; then
		awk '$1 == "srqs" { print $2 }' /sys/kernel/debug/sroce/objects
	else
		rdma resource show | awk -v d="$DEV:" '
			$2 == d { for (i = 3; i < NF; i++) if ($i == "srq") print $(i + 1) }'
	fi
}

t_nvmf_disconnect() {
	local c
	if [ "$SROCE_ROLE" = b ]; then
		for c in /sys/class/nvme/nvme*; do
			[ -e "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$NQN" ] &&
				echo 1 >"$c/delete_controller"
		done
		wait_until 30 '! host_disk >/dev/null' || fail "controller still there"
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = a ]; then
		rm -f "$CFS/ports/1/subsystems/$NQN"
		rmdir "$CFS/ports/1" "$CFS/subsystems/$NQN/namespaces/1" \
			"$CFS/subsystems/$NQN" || fail "target configuration stuck"
		unload_module brd
		unload_module nvmet_rdma
	else
		unload_module nvme_rdma
	fi
}

# unload_module MODULE: it must go (its users gone with the disconnect)
unload_module() {
	wait_for 30 modprobe -r "$1" || fail "modprobe -r $1 failed"
	[ ! -d "/sys/module/$1" ] || fail "$1 still loaded"
}

# The target again, its queues' receives now on SRQs.
t_srq_target_listens() {
	if [ "$SROCE_ROLE" = a ]; then
		modprobe nvmet-rdma use_srq=1 || fail "modprobe nvmet-rdma use_srq=1"
		expect_eq "$(cat /sys/module/nvmet_rdma/parameters/use_srq)" Y \
			"nvmet-rdma use_srq"
		target_up
	else
		modprobe nvme-rdma || fail "modprobe nvme-rdma"
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
}

t_srq_connect_write_read() {
	local rc=0 srqs
	if [ "$SROCE_ROLE" = b ]; then
		(nvmf_write_read)
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = a ]; then
		# while guest b is still connected: nvmet-rdma frees its SRQs
		# with the last queue, and b waits at the next barrier until
		# they are counted (once, b disconnected first and a saw none)
		srqs=$(srq_count)
		echo "target SRQs: ${srqs:-unknown}"
	fi
	tb_barrier "$KTAP_CASE.counted" 60 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "NVMe-oF I/O failed"
	if [ "$SROCE_ROLE" = a ]; then
		[ "${srqs:-0}" -gt 0 ] || fail "nvmet-rdma made no SRQ on $DEV"
		target_has_host_data
	fi
}

t_srq_disconnect() { t_nvmf_disconnect; }

# ---- the device's resources, modules, listeners (the cases here and in ----
# ---- lib/ulp_nvmf.sh and lib/ulp_scsi.sh) ---------------------------------

# idle_pool_cqs: the CQs of ib_core's shared CQ pool (ib_cq_pool_get, used
# by ib_srpt, ib_isert, ib_iser, nvme-rdma and nvmet-rdma) that no QP uses:
# the pool keeps them until the device goes (t_teardown_clean sees them
# go), so they are not left behind by a ULP
idle_pool_cqs() {
	rdma resource show cq | awk -v d="$DEV" '
		/\[ib_core\]/ {
			mine = idle = 0
			for (i = 1; i < NF; i++) {
				if (($i == "dev" && $(i + 1) == d) ||
				    ($i == "link" && index($(i + 1), d "/") == 1))
					mine = 1
				if ($i == "users" && $(i + 1) == 0)
					idle = 1
			}
			n += mine && idle
		}
		END { print n + 0 }'
}

# ulp_resources: what the device holds for kernel users (the rdma tool's
# counts, and sroce's debugfs object counts where sroce is loaded, one ring
# per CQ), idle CQs of ib_core's pool not counted
ulp_resources() {
	local idle
	idle=$(idle_pool_cqs)
	rdma resource show | awk -v d="$DEV:" -v idle="$idle" '
		$2 == d { for (i = 3; i < NF; i++) if ($i == "cq") $(i + 1) -= idle
			  $1 = ""; print }'
	[ ! -r /sys/kernel/debug/sroce/objects ] ||
		awk -v idle="$idle" '
			$1 == "cqs" || $1 == "rings" { $2 -= idle }
			{ printf "%s %s ", $1, $2 }' /sys/kernel/debug/sroce/objects
}

# ulp_resources_back: the counts are what ulp_resources_save saw
ulp_resources_save() { ulp_resources >/tmp/ulp-res-before; }
ulp_resources_back() {
	wait_until 30 '[ "$(ulp_resources)" = "$(cat /tmp/ulp-res-before)" ]' ||
		fail "resources left: now '$(ulp_resources)', before '$(cat /tmp/ulp-res-before)'"
	echo "resources as before: $(ulp_resources) (and $(idle_pool_cqs) idle CQs in ib_core's pool)"
}

# unload_modules MODULE...: each that is loaded must go
unload_modules() {
	local m
	for m; do
		[ ! -d "/sys/module/$m" ] || unload_module "$m"
	done
}

# cm_listener PORT: the rdma_cm IDs that listen on PORT, as the rdma tool
# shows them
cm_listener() {
	rdma resource show cm_id | grep -E "LISTEN.*src-addr [^ ]*:$1( |$)" || :
}

# cm_listens PORT: an rdma_cm ID of the device listens on PORT
cm_listens() {
	local listen
	listen=$(cm_listener "$1")
	echo "listener: ${listen:-none}"
	[ -n "$listen" ] || fail "no rdma_cm listener on port $1: $(rdma resource show cm_id)"
}

. "$(dirname "$0")/lib/ulp_nvmf.sh"
. "$(dirname "$0")/lib/ulp_nfs.sh"
. "$(dirname "$0")/lib/ulp_scsi.sh"
. "$(dirname "$0")/lib/ulp_rds.sh"

CASES=(
	t_setup
	t_nvmf_target_listens
	t_nvmf_connect_write_read
	t_nvmf_target_restart
	t_nvmf_link_flap
	t_nvmf_netem_loss
	t_nvmf_disconnect_under_load
	t_nvmf_disconnect
	t_srq_target_listens
	t_srq_connect_write_read
	t_srq_disconnect
	t_srp_target_listens
	t_srp_login_write_read
	t_srp_logout
	t_iser_target_listens
	t_iser_login_write_read
	t_iser_logout
	t_nfs_server_up
	t_nfs3_rdma_write_read
	t_nfs42_rdma_write_read
	t_nfs_server_down
	t_rds_ping
)
# A case list on the command line runs just those cases (t_setup first).
if [ $# -gt 0 ]; then
	ktap_main t_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
