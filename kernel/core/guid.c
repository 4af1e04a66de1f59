// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Node GUID derivation.
 *
 * librdmacm maps a connection to a verbs device by node GUID, so the GUID must
 * be stable and unique per device.  It is derived from the netdev's MAC, but
 * deliberately not with the EUI-48 to EUI-64 expansion (flip the U/L bit,
 * insert ff:fe) that rdma_rxe uses: an sroce device never has the GUID rxe
 * would give a device on the same MAC, so tools and peers can tell the two
 * drivers apart on a host that switches between them.  The layout is a
 * two-byte prefix followed by the whole MAC, so distinct MACs give distinct
 * GUIDs.  The prefix 0x52 0x53 ("RS") has the locally-administered bit set
 * and the group bit clear, as a GUID no manufacturer assigned should.
 */
#include "guid.h"

void sroce_guid_from_mac(u8 guid[SROCE_GUID_LEN], const u8 mac[SROCE_MAC_LEN])
{
	guid[0] = 0x52;
	guid[1] = 0x53;
	memcpy(&guid[2], mac, SROCE_MAC_LEN);
}
