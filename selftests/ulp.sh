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
# the device's resources back to what they were.  Emits KTAP.
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
	local ipi listen g
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
		listen=$(rdma resource show cm_id | grep -E "LISTEN.*src-addr [^ ]*:$SRP_PORT( |$)" || :)
		echo "listener: ${listen:-none}"
		[ -n "$listen" ] || fail "no rdma_cm listener on port $SRP_PORT: $(rdma resource show cm_id)"
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

t_srp_login_write_read() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		(srp_login_write_read)
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "SRP I/O failed"
	[ "$SROCE_ROLE" = b ] || target_has_host_data
}

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
	local listen
	ulp_resources_save
	if [ "$SROCE_ROLE" = a ]; then
		iser_target_up
		listen=$(rdma resource show cm_id | grep -E "LISTEN.*src-addr [^ ]*:3260( |$)" || :)
		echo "listener: ${listen:-none}"
		[ -n "$listen" ] || fail "no rdma_cm listener on port 3260: $(rdma resource show cm_id)"
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

t_iser_login_write_read() {
	local rc=0
	if [ "$SROCE_ROLE" = b ]; then
		(iser_login_write_read)
		rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	[ "$rc" = 0 ] || fail "iSER I/O failed"
	[ "$SROCE_ROLE" = b ] || target_has_host_data
}

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
)
# A case list on the command line runs just those cases (t_setup first).
if [ $# -gt 0 ]; then
	ktap_main t_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
