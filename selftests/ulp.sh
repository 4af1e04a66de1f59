#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel RDMA users between two guests: NVMe over Fabrics on RDMA, the
# kernel's own rdma_cm, fast-register MRs, SEND_WITH_INVALIDATE and local
# invalidation.  Guest a exports a RAM disk namespace with nvmet-rdma;
# guest b connects with nvme-rdma (through /dev/nvme-fabrics, no nvme-cli
# needed), writes random data with O_DIRECT, reads it back and compares,
# then disconnects.  Then the same again with the target's receives on
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
# Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 2 selftests/ulp.sh                 # sroce
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/ulp.sh     # the reference
#   scripts/testbed -k 6.1 -n 2 selftests/ulp.sh t_srp_target_listens \
#           t_srp_login_write_read t_srp_logout   # some cases (+ setup, teardown)

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "ulp.sh needs two guests (-n 2)" >&2; exit 2; }

NQN=nqn.2026-11.org.sroce:ulp-test
CFS=/sys/kernel/config/nvmet
IMG=/dev/ram0
MIB=32

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

# (guest b has nothing to check until it connects: one-sided)
t_nvmf_target_listens() {
	if [ "$SROCE_ROLE" = a ]; then
		target_up
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	only_in_guest a
}

# Guest b's side of t_nvmf_connect_write_read.
nvmf_write_read() {
	local disk=
	echo "transport=rdma,traddr=$SROCE_PEER_IP4,trsvcid=4420,nqn=$NQN" \
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
# is on the target's RAM disk.
target_has_host_data() {
	local want got
	want=$(tb_get "$KTAP_CASE.sum" 10) || fail "guest b published no checksum: its I/O failed"
	got=$(dd if=$IMG bs=1M count=$MIB iflag=direct status=none | sha256sum)
	expect_eq "$got" "$want" "checksum of $IMG on the target"
}

t_nvmf_connect_write_read() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		(nvmf_write_read)
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "NVMe-oF I/O failed"
	[ "$SROCE_ROLE" = b ] || target_has_host_data
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
	[ "$rc" = 0 ] || fail "NVMe-oF I/O failed"
	if [ "$SROCE_ROLE" = a ]; then
		# first, while guest b is still connected
		srqs=$(srq_count)
		echo "target SRQs: ${srqs:-unknown}"
		[ "${srqs:-0}" -gt 0 ] || fail "nvmet-rdma made no SRQ on $DEV"
		target_has_host_data
	fi
}

t_srq_disconnect() { t_nvmf_disconnect; }

# ---- NFS over RDMA ------------------------------------------------------
# Guest a: the kernel's nfsd with an RDMA listener (svcrdma) on port
# NFS_PORT, exporting a tmpfs (the overlay root is not exportable) to guest
# b only; rpcbind and rpc.mountd started here, nothing else (no statd: the
# NFSv3 client mounts with nolock).  Guest b: the kernel's NFS client over
# xprtrdma, NFSv3 and NFSv4.2, NFS_MIB of random data written and read back
# with O_DIRECT, then written buffered and read back after a remount (the
# page cache dropped, so the read crosses the wire).  Both guests count
# their port's packets: each write and read moves at least NFS_MIB over
# RDMA (a packet carries at most 4096 bytes).

NFS_EXPORT=/tmp/sroce-nfs-export
NFS_MNT=/tmp/sroce-nfs-mnt
NFS_PORT=20049
NFS_MIB=8
NFS_RUN=/run/sroce-nfs
# at least this many packets per NFS_MIB transferred
NFS_MIN_PKTS=$((NFS_MIB * 1024 * 1024 / 4096))

# The device's objects: sroce's debugfs counts, or rdma_rxe's as the rdma
# tool counts them.
nfs_objects() {
	if [ -r /sys/kernel/debug/sroce/objects ]; then
		tr '\n' ' ' </sys/kernel/debug/sroce/objects
	else
		rdma resource show | awk -v d="$DEV:" '$2 == d { $1 = ""; print }'
	fi
}

# nfs_ctr NAME: a counter of the device's port
nfs_ctr() {
	local v
	read -r v <"/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" || return 1
	echo "$v"
}

# nfs_rose NAME BEFORE WHAT: NAME rose by at least NFS_MIN_PKTS since BEFORE
nfs_rose() {
	local now
	now=$(nfs_ctr "$1")
	echo "$3: $1 +$((now - $2))"
	[ $((now - $2)) -ge "$NFS_MIN_PKTS" ] ||
		fail "$3: $1 rose by $((now - $2)), less than the $NFS_MIN_PKTS packets of $NFS_MIB MiB"
}

# nfs_daemon NAME CMD...: start a daemon in the foreground of a background
# job, its pid in NFS_RUN/NAME.pid, its output in NFS_RUN/NAME.log
nfs_daemon() {
	local name=$1
	shift
	"$@" >"$NFS_RUN/$name.log" 2>&1 </dev/null &
	echo $! >"$NFS_RUN/$name.pid"
}

# Guest a's side of t_nfs_server_up
nfs_server_start() {
	local ports
	mkdir -p "$NFS_EXPORT"
	mount -t tmpfs -o size=$((4 * NFS_MIB))m sroce-nfs "$NFS_EXPORT" ||
		fail "cannot mount a tmpfs on $NFS_EXPORT"
	modprobe nfsd || fail "modprobe nfsd"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		fail "cannot mount the nfsd file system"
	# rpcbind: the NFSv3 server registers with it, mount.nfs asks it for
	# rpc.mountd
	mkdir -p /run/rpcbind
	chown _rpc:root /run/rpcbind
	nfs_daemon rpcbind rpcbind -f
	wait_for 30 rpcinfo -p >/dev/null 2>&1 ||
		fail "rpcbind does not answer: $(cat "$NFS_RUN/rpcbind.log")"
	# insecure: the RDMA client does not use a reserved port; fsid=0: the
	# NFSv4 root, so that NFSv4 needs no pseudo export of the overlay root
	exportfs -o rw,sync,insecure,no_root_squash,no_subtree_check,fsid=0 \
		"$SROCE_PEER_IP4:$NFS_EXPORT" || fail "exportfs refused the export"
	nfs_daemon mountd rpc.mountd -F
	# the shortest NFSv4 grace time (10 s): OPENs wait for its end
	rpc.nfsd -G 10 --rdma=$NFS_PORT 4 ||
		fail "rpc.nfsd failed: $(dmesg | tail -5)"
	ports=$(cat /proc/fs/nfsd/portlist)
	echo "nfsd listens on: $(tr '\n' ' ' <<<"$ports")"
	grep -qx "rdma $NFS_PORT" <<<"$ports" ||
		fail "no RDMA listener in /proc/fs/nfsd/portlist"
	wait_until 30 'rpcinfo -p 2>/dev/null | grep -q mountd' ||
		fail "rpc.mountd did not register: $(cat "$NFS_RUN/mountd.log")"
	echo "exports: $(exportfs -v | tr -s '\n\t ' ' ')"
}

# Both guests load the RPC-over-RDMA transports (client and server, one
# module); guest a starts the server.  The object counts before it are the
# baseline t_nfs_server_down compares with.
t_nfs_server_up() {
	local rc=0
	mkdir -p "$NFS_RUN"
	nfs_objects >"$NFS_RUN/objects.before"
	echo "objects before: $(cat "$NFS_RUN/objects.before")"
	modprobe rpcrdma || fail "modprobe rpcrdma"
	if [ "$SROCE_ROLE" = a ]; then
		(nfs_server_start) || rc=$?
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "the NFS server did not start"
}

# nfs_mount OPTIONS SOURCE: mount it on NFS_MNT; RDMA it must be
nfs_mount() {
	local line xprt
	timeout -s KILL $((180 * SLOW)) mount -t nfs -o "$1" "$2" "$NFS_MNT" ||
		fail "mount -o $1 $2 failed: $(dmesg | tail -5)"
	line=$(awk -v m="$NFS_MNT" '$2 == m' /proc/mounts)
	echo "mounted: $line"
	expect_match "$line" "[ ,]proto=rdma[ ,]" "/proc/mounts"
	expect_match "$line" "[ ,]port=${NFS_PORT}[ ,]" "/proc/mounts"
	xprt=$(awk -v m="$NFS_MNT" '
		$1 == "device" { here = ($5 == m) }
		here && $1 == "xprt:" { print $2 }' /proc/self/mountstats)
	expect_eq "$xprt" rdma "the mount's transport in /proc/self/mountstats"
}

nfs_umount() {
	timeout -s KILL $((120 * SLOW)) umount "$NFS_MNT" || fail "umount failed"
	! mountpoint -q "$NFS_MNT" || fail "$NFS_MNT still mounted"
}

# nfs_dd ARGS...: dd with a time limit (a hard NFS mount's I/O only dies
# of SIGKILL)
nfs_dd() {
	timeout -s KILL $((300 * SLOW)) dd bs=1M status=none "$@"
}

# Guest b's side of the NFS write/read cases: nfs_client_io VERS SOURCE
nfs_client_io() {
	local vers=$1 src=$2 opts data=/tmp/sroce-nfs-data back=/tmp/sroce-nfs-back
	local c
	opts=rdma,port=$NFS_PORT,vers=$vers
	# no statd in the guests: no NLM locks
	[ "$vers" != 3 ] || opts=$opts,nolock,mountproto=tcp
	mkdir -p "$NFS_MNT"
	head -c $((NFS_MIB * 1024 * 1024)) /dev/urandom >"$data"
	nfs_mount "$opts" "$src"
	expect_match "$(awk -v m="$NFS_MNT" '$2 == m' /proc/mounts)" \
		"[ ,]vers=${vers}[ ,]" "NFS version in /proc/mounts"
	# the mount holds RDMA objects of the device (QPs, CQs, MRs)
	c=$(nfs_objects)
	echo "objects while mounted: $c"
	[ "$c" != "$(cat "$NFS_RUN/objects.before")" ] ||
		fail "the mount holds no object of $DEV"

	c=$(nfs_ctr sent_pkts)
	nfs_dd if="$data" of="$NFS_MNT/direct" oflag=direct || fail "O_DIRECT write failed"
	nfs_rose sent_pkts "$c" "O_DIRECT write"
	c=$(nfs_ctr rcvd_pkts)
	nfs_dd if="$NFS_MNT/direct" of="$back" iflag=direct || fail "O_DIRECT read failed"
	nfs_rose rcvd_pkts "$c" "O_DIRECT read"
	cmp "$data" "$back" || fail "O_DIRECT read back other data"

	c=$(nfs_ctr sent_pkts)
	nfs_dd if="$data" of="$NFS_MNT/buffered" conv=fsync || fail "buffered write failed"
	nfs_rose sent_pkts "$c" "buffered write"
	# a new mount, no page cache: the read must come over the wire
	nfs_umount
	echo 3 >/proc/sys/vm/drop_caches
	nfs_mount "$opts" "$src"
	c=$(nfs_ctr rcvd_pkts)
	nfs_dd if="$NFS_MNT/buffered" of="$back" || fail "buffered read failed"
	nfs_rose rcvd_pkts "$c" "buffered read after a remount"
	cmp "$data" "$back" || fail "buffered read back other data"
	nfs_umount
	tb_put "$KTAP_CASE.sum" "$(sha256sum <"$data")"
}

# nfs_write_read VERS SOURCE: guest b writes and reads through the mount;
# guest a finds both files on its export with b's bytes, and its own port
# counted the traffic (the two writes pulled, the two reads pushed)
nfs_write_read() {
	local rc=0 f want got s0 r0
	s0=$(nfs_ctr sent_pkts)
	r0=$(nfs_ctr rcvd_pkts)
	tb_barrier "$KTAP_CASE.start" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = b ]; then
		(nfs_client_io "$@") || rc=$?
	fi
	tb_barrier "$KTAP_CASE" 600 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "NFS over RDMA I/O failed"
	[ "$SROCE_ROLE" = a ] || return 0
	want=$(tb_get "$KTAP_CASE.sum" 10) || fail "guest b published no checksum"
	for f in direct buffered; do
		got=$(sha256sum <"$NFS_EXPORT/$f")
		expect_eq "$got" "$want" "checksum of $f on the export"
	done
	echo "direct and buffered on the export: guest b's SHA-256"
	NFS_MIN_PKTS=$((2 * NFS_MIN_PKTS)) nfs_rose rcvd_pkts "$r0" "server, two writes"
	NFS_MIN_PKTS=$((2 * NFS_MIN_PKTS)) nfs_rose sent_pkts "$s0" "server, two reads"
	rm -f "$NFS_EXPORT/direct" "$NFS_EXPORT/buffered"
}

t_nfs3_rdma_write_read() { nfs_write_read 3 "$SROCE_PEER_IP4:$NFS_EXPORT"; }

# (the export is the NFSv4 root: fsid=0)
t_nfs42_rdma_write_read() { nfs_write_read 4.2 "$SROCE_PEER_IP4:/"; }

# nfs_kill NAME: end the daemon nfs_daemon started
nfs_kill() {
	local pid
	read -r pid <"$NFS_RUN/$1.pid" || fail "no pid of $1"
	kill "$pid" 2>/dev/null || fail "$1 (pid $pid) was not running"
	wait_until 30 '! kill -0 $pid 2>/dev/null' || fail "$1 (pid $pid) did not end"
}

# Guest a's side of t_nfs_server_down
nfs_server_stop() {
	rpc.nfsd 0 || fail "rpc.nfsd 0 failed"
	exportfs -ua || fail "exportfs -ua failed"
	nfs_kill mountd
	nfs_kill rpcbind
	umount /proc/fs/nfsd || fail "cannot unmount the nfsd file system"
	umount "$NFS_EXPORT" || fail "cannot unmount the export"
	unload_module nfsd
}

# The server stopped and the RPC-over-RDMA module unloaded in both guests:
# the device's objects back to their counts before t_nfs_server_up
t_nfs_server_down() {
	local rc=0 left='' before
	if [ "$SROCE_ROLE" = b ] && mountpoint -q "$NFS_MNT"; then
		left="an NFS mount was left on $NFS_MNT"
		umount -f -l "$NFS_MNT" || :
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = a ]; then
		(nfs_server_stop) || rc=$?
	fi
	[ -z "$left" ] || fail "$left"
	[ "$rc" = 0 ] || fail "the NFS server did not stop cleanly"
	unload_module rpcrdma
	before=$(cat "$NFS_RUN/objects.before")
	wait_until 60 '[ "$(nfs_objects)" = "$before" ]' ||
		fail "objects: $(nfs_objects), before the NFS cases: $before"
	echo "objects back to: $before"
}

# --- SRP: ib_srpt target, ib_srp initiator, over rdma_cm --------------------
#
# Guest a exports the RAM disk as LUN 0 of an ib_srpt target port (LIO
# configfs, an iblock backstore); ib_srpt's rdma_cm listener is its
# discovery_auth/rdma_cm_port attribute (a configfs file, not a module
# parameter).  Guest b logs in with ib_srp through rdma_cm (add_target with
# dest=IP:PORT), the LUN appearing as a SCSI disk, and removes the target
# port again.  The target accepts b only through an ACL named by b's SRP
# initiator port id: 8 bytes of initiator_ext (0) and the interface id of
# b's GID 0.

TCFS=/sys/kernel/config/target
SRP_PORT=5555
# LIO's core and the backstore modules it loads itself when first used
TARGET_MODULES="target_core_iblock target_core_file target_core_pscsi target_core_user target_core_mod"

# gid0_hex: this guest's GID 0 as 32 hex digits
gid0_hex() {
	local g
	g=$(cat "/sys/class/infiniband/$DEV/ports/1/gids/0") || return 1
	g=${g//:/}
	[ ${#g} = 32 ] || return 1
	echo "$g"
}

# idle_pool_cqs: the CQs of ib_core's shared CQ pool (ib_cq_pool_get, used
# by ib_srpt, ib_isert and ib_iser) that no QP uses: the pool keeps them
# until the device goes (t_teardown_clean sees them go), so they are not
# left behind by a ULP
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

# cm_listens PORT: an rdma_cm ID of the device listens on PORT
cm_listens() {
	local listen
	listen=$(rdma resource show cm_id | grep -E "LISTEN.*src-addr [^ ]*:$1( |$)" || :)
	echo "listener: ${listen:-none}"
	[ -n "$listen" ] || fail "no rdma_cm listener on port $1: $(rdma resource show cm_id)"
}

# Guest a's srpt target port (named by its GID 0) and portal group
srp_tport() { echo "$TCFS/srpt/0x$(gid0_hex)"; }

# srp_target_up I_PORT_ID: the RAM disk as LUN 0 of an enabled srpt portal
# group that lets I_PORT_ID in, the rdma_cm listener on SRP_PORT
srp_target_up() {
	local ipi=$1 tpg
	modprobe brd rd_nr=1 rd_size=$((MIB * 1024)) || fail "modprobe brd"
	modprobe ib_srpt || fail "modprobe ib_srpt"
	modprobe target_core_iblock || fail "modprobe target_core_iblock"
	mkdir -p "$TCFS/core/iblock_0/srp" || fail "no iblock backstore"
	echo "udev_path=$IMG" >"$TCFS/core/iblock_0/srp/control"
	echo 1 >"$TCFS/core/iblock_0/srp/enable" ||
		fail "backstore not enabled: $(dmesg | tail -3)"
	[ -d "$TCFS/srpt" ] || mkdir "$TCFS/srpt" || fail "no srpt fabric in configfs"
	echo $SRP_PORT >"$TCFS/srpt/discovery_auth/rdma_cm_port" ||
		fail "rdma_cm_port refused: $(dmesg | tail -3)"
	mkdir "$(srp_tport)" ||
		fail "srpt refused target port $(srp_tport): $(dmesg | tail -3)"
	tpg=$(srp_tport)/tpg_1
	mkdir "$tpg" || fail "no portal group"
	mkdir "$tpg/lun/lun_0"
	ln -s "$TCFS/core/iblock_0/srp" "$tpg/lun/lun_0/srp" ||
		fail "LUN 0 refused the backstore"
	mkdir "$tpg/acls/$ipi" || fail "srpt refused ACL $ipi"
	mkdir "$tpg/acls/$ipi/lun_0"
	ln -s "$tpg/lun/lun_0" "$tpg/acls/$ipi/lun_0/lun_0" ||
		fail "ACL refused LUN 0"
	echo 1 >"$tpg/enable" || fail "portal group not enabled"
}

t_srp_target_listens() {
	local ipi g
	ulp_resources_save
	if [ "$SROCE_ROLE" = b ]; then
		g=$(gid0_hex) || fail "no GID 0 on $DEV"
		tb_put srp.gid "$g"
	else
		ipi=$(tb_get srp.gid 60) || fail "guest b published no GID"
		# initiator_ext 0, then the interface id of b's GID 0
		ipi=0x0000000000000000${ipi:16}
		echo "target port $(srp_tport), initiator $ipi"
		srp_target_up "$ipi"
		tb_put srp.guid "$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)"
		cm_listens "$SRP_PORT"
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	only_in_guest a
}

# The SCSI host ib_srp made for the target port, e.g. host2
srp_host() {
	local h
	for h in /sys/class/scsi_host/host*; do
		[ "$(cat "$h/proc_name" 2>/dev/null)" = ib_srp ] || continue
		echo "${h##*/}"
		return 0
	done
	return 1
}

# srp_disk HOST: the block device of LUN 0 behind HOST
srp_disk() {
	local d
	for d in /sys/class/scsi_host/"$1"/device/target*/*:0/block/*; do
		[ -e "$d" ] || continue
		echo "${d##*/}"
		return 0
	done
	return 1
}

# Guest b's side of t_srp_login_write_read
srp_login_write_read() {
	local guid host disk= dir
	guid=$(tb_get srp.guid 60) || fail "the target published no service GUID"
	modprobe ib_srp || fail "modprobe ib_srp"
	modprobe sd_mod || fail "modprobe sd_mod"
	dir=/sys/class/infiniband_srp/srp-$DEV-1
	[ -e "$dir/add_target" ] || fail "ib_srp made no $dir/add_target"
	echo "id_ext=$guid,ioc_guid=$guid,dest=$SROCE_PEER_IP4:$SRP_PORT" \
		>"$dir/add_target" ||
		fail "login refused: $(dmesg | grep -i srp | tail -5)"
	host=$(srp_host) || fail "no ib_srp SCSI host after the login"
	echo "SCSI host: $host, $(cat /sys/class/scsi_host/$host/dgid 2>/dev/null)"
	wait_until 60 'disk=$(srp_disk $host) && [ "$(cat /sys/block/$disk/size)" != 0 ]' ||
		fail "no disk behind $host: $(ls -R /sys/class/scsi_host/$host/device/ | head -20)"
	echo "LUN 0: /dev/$disk ($(cat /sys/block/$disk/device/vendor) $(cat /sys/block/$disk/device/model))"
	disk_write_read "$disk"
	rm -f /tmp/ulp-data /tmp/ulp-back /tmp/ulp-4k
}

# scsi_io_case FN WHAT: guest b logs in and moves the data (FN, in a
# subshell: its fail ends only FN), guest a then checks its RAM disk
scsi_io_case() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		("$1")
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "$2 I/O failed"
	[ "$SROCE_ROLE" = b ] || target_has_host_data
}

t_srp_login_write_read() { scsi_io_case srp_login_write_read SRP; }

# The initiator removes the target port, then the target goes.
t_srp_logout() {
	local host tpg ipi
	if [ "$SROCE_ROLE" = b ]; then
		host=$(srp_host) || fail "no ib_srp SCSI host left to remove"
		for ipi in /sys/class/srp_remote_ports/port-"${host#host}":*; do
			echo 1 >"$ipi/delete" || fail "delete of ${ipi##*/} refused"
		done
		wait_until 60 '! srp_host >/dev/null' || fail "ib_srp host still there"
		unload_modules ib_srp scsi_transport_srp
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = a ]; then
		tpg=$(srp_tport)/tpg_1
		echo 0 >"$tpg/enable"
		for ipi in "$tpg"/acls/*/; do
			rm -f "$ipi"lun_0/lun_0
			rmdir "$ipi"lun_0 "$ipi" || fail "ACL ${ipi%/} stuck"
		done
		rm -f "$tpg/lun/lun_0/srp"
		rmdir "$tpg/lun/lun_0" "$tpg" "$(srp_tport)" ||
			fail "srpt configuration stuck"
		echo 0 >"$TCFS/srpt/discovery_auth/rdma_cm_port"
		rmdir "$TCFS/srpt" "$TCFS/core/iblock_0/srp" "$TCFS/core/iblock_0" ||
			fail "target configuration stuck"
		# shellcheck disable=SC2086
		unload_modules ib_srpt $TARGET_MODULES brd
	fi
	ulp_resources_back
}

# --- iSER: an LIO iSCSI target with an iSER portal, open-iscsi's iser -------
#
# Guest a exports the RAM disk as LUN 0 of an iSCSI target whose network
# portal has iSER enabled (ib_isert); the portal group lets any initiator in
# (generate_node_acls, no authentication, writable).  Guest b starts iscsid
# itself (no init system in the guests), makes a node record bound to
# open-iscsi's iser interface and logs in with iscsiadm (ib_iser), then logs
# out again.

ISER_IQN=iqn.2026-11.org.sroce:iser-test
ISER_TPG=$TCFS/iscsi/$ISER_IQN/tpgt_1

iser_target_up() {
	local np=$ISER_TPG/np/$SROCE_IP4:3260 a
	modprobe brd rd_nr=1 rd_size=$((MIB * 1024)) || fail "modprobe brd"
	modprobe iscsi_target_mod || fail "modprobe iscsi_target_mod"
	modprobe ib_isert || fail "modprobe ib_isert"
	modprobe target_core_iblock || fail "modprobe target_core_iblock"
	mkdir -p "$TCFS/core/iblock_0/iser" || fail "no iblock backstore"
	echo "udev_path=$IMG" >"$TCFS/core/iblock_0/iser/control"
	echo 1 >"$TCFS/core/iblock_0/iser/enable" ||
		fail "backstore not enabled: $(dmesg | tail -3)"
	mkdir -p "$ISER_TPG" || fail "no iSCSI target $ISER_IQN"
	mkdir "$ISER_TPG/lun/lun_0"
	ln -s "$TCFS/core/iblock_0/iser" "$ISER_TPG/lun/lun_0/iser" ||
		fail "LUN 0 refused the backstore"
	for a in generate_node_acls=1 cache_dynamic_acls=1 authentication=0 \
		demo_mode_write_protect=0; do
		echo "${a#*=}" >"$ISER_TPG/attrib/${a%=*}" ||
			fail "attribute $a refused"
	done
	mkdir "$np" || fail "network portal $SROCE_IP4:3260 refused"
	echo 1 >"$np/iser" || fail "iSER refused on the portal: $(dmesg | tail -3)"
	expect_eq "$(cat "$np/iser")" 1 "the portal's iser attribute"
	echo 1 >"$ISER_TPG/enable" || fail "portal group not enabled"
}

t_iser_target_listens() {
	ulp_resources_save
	if [ "$SROCE_ROLE" = a ]; then
		iser_target_up
		cm_listens 3260
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	only_in_guest a
}

# iscsiadm ARGS...: open-iscsi's tool with what it printed kept for the log
iscsi() {
	local out rc=0
	out=$(timeout $((120 * SLOW)) iscsiadm "$@" 2>&1) || rc=$?
	printf 'iscsiadm %s: %s\n' "$*" "$out"
	return "$rc"
}

# iscsid_up: iscsid listens on the abstract socket iscsiadm reaches it by
iscsid_up() { grep -q ISCSIADM_ABSTRACT_NAMESPACE /proc/net/unix; }

# The block device of LUN 0 of the iSCSI session, if any
iser_disk() {
	local d
	for d in /sys/class/iscsi_session/session*/device/target*/*:0/block/*; do
		[ -e "$d" ] || continue
		echo "${d##*/}"
		return 0
	done
	return 1
}

# Guest b's side of t_iser_login_write_read
iser_login_write_read() {
	local portal=$SROCE_PEER_IP4:3260 disk= sessions
	command -v iscsiadm >/dev/null && command -v iscsid >/dev/null ||
		fail "open-iscsi is not installed (scripts/install-deps.sh)"
	modprobe ib_iser || fail "modprobe ib_iser"
	modprobe sd_mod || fail "modprobe sd_mod"
	# the guest's own name, and iscsid started here: nothing runs services
	echo "InitiatorName=iqn.2026-11.org.sroce:iser-initiator" \
		>/etc/iscsi/initiatorname.iscsi
	mkdir -p /run/lock/iscsi
	# in its own session: iscsid's shutdown signals its whole process group
	setsid iscsid -f >/tmp/ulp-iscsid.log 2>&1 &
	wait_until 30 iscsid_up ||
		fail "iscsid did not come up: $(cat /tmp/ulp-iscsid.log)"
	iscsi -m node -o new -T "$ISER_IQN" -p "$portal" -I iser ||
		fail "no node record"
	iscsi -m node -T "$ISER_IQN" -p "$portal" -I iser --login ||
		fail "login failed: $(dmesg | grep -i iser | tail -5)"
	sessions=$(iscsiadm -m session)
	echo "sessions: $sessions"
	expect_match "$sessions" "^iser: \[[0-9]+\] $portal,1 $ISER_IQN" "the session"
	wait_until 60 'disk=$(iser_disk) && [ "$(cat /sys/block/$disk/size)" != 0 ]' ||
		fail "no disk in the session: $(iscsiadm -m session -P 3 2>&1 | tail -20)"
	echo "LUN 0: /dev/$disk"
	disk_write_read "$disk"
	rm -f /tmp/ulp-data /tmp/ulp-back /tmp/ulp-4k
}

t_iser_login_write_read() { scsi_io_case iser_login_write_read iSER; }

t_iser_logout() {
	if [ "$SROCE_ROLE" = b ]; then
		iscsi -m node -T "$ISER_IQN" -p "$SROCE_PEER_IP4:3260" -I iser --logout ||
			fail "logout failed"
		iscsi -m node -o delete -T "$ISER_IQN" || fail "node record stuck"
		wait_until 30 '! iser_disk >/dev/null' || fail "disk still there"
		iscsi -k 0 || :   # (it may hang up before it answers)
		wait_until 30 '! iscsid_up' || fail "iscsid did not exit"
		unload_modules ib_iser libiscsi scsi_transport_iscsi
	fi
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = a ]; then
		echo 0 >"$ISER_TPG/enable"
		echo 0 >"$ISER_TPG/np/$SROCE_IP4:3260/iser"
		rmdir "$ISER_TPG/np/$SROCE_IP4:3260" || fail "network portal stuck"
		rm -f "$ISER_TPG/lun/lun_0/iser"
		rmdir "$ISER_TPG/lun/lun_0" "$ISER_TPG" "${ISER_TPG%/*}" ||
			fail "iSCSI target configuration stuck"
		rmdir "$TCFS/iscsi" "$TCFS/core/iblock_0/iser" "$TCFS/core/iblock_0" ||
			fail "target configuration stuck"
		# shellcheck disable=SC2086
		unload_modules ib_isert iscsi_target_mod $TARGET_MODULES brd
	fi
	ulp_resources_back
}

CASES=(
	t_setup
	t_nvmf_target_listens
	t_nvmf_connect_write_read
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
)
# A case list on the command line runs just those cases (t_setup first).
if [ $# -gt 0 ]; then
	ktap_main t_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
