# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA cases of selftests/ulp.sh (sourced by it; they use its DEV
# and unload_module).

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
