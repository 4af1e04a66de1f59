# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# SCSI over RDMA cases of selftests/ulp.sh (sourced by it; they use its
# DEV, IMG, MIB, disk_write_read, target_has_host_data, cm_listens,
# unload_modules and ulp_resources_save/ulp_resources_back): SRP and iSER,
# each through an LIO target on guest a's RAM disk.

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

