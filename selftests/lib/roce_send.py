#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Send hand-made RoCE v2 packets through raw IP sockets.

    roce_send.py [-n COUNT] [-q QPN[-LAST]] KIND SRC DST [KIND SRC DST ...]

Sends COUNT (default 10) RC SEND-only packets to QP number QPN (default
0xabcdef) for each KIND SRC DST triple, and prints one line per triple.
QPN may be a range FIRST-LAST: the packets then go to each number in turn.
KIND is "valid" (a correct ICRC) or "bad-icrc" (the correct ICRC with one
bit flipped).  SRC and DST are both IPv4 or both IPv6 addresses; SRC is
written into the packet as is.  Needs root (raw sockets).

The whole IP packet is built here (IPv4 with IP_HDRINCL, IPv6 with an
IPPROTO_RAW socket), so every byte the ICRC covers is known, including the
IPv4 identification.  The UDP checksum is 0, as RoCE v2 sends it.  The
fields the ICRC leaves out (IPv4 TOS and TTL, IPv6 traffic class, flow label
and hop limit, BTH byte 4) are random, so a receiver that covers any of them
rejects the valid packets.  The ICRC is computed independently of sroce's C
code, from IBTA Vol. 1, 7.8.1 and Annex A17 (Documentation/protocol-core.md):
CRC-32 (zlib.crc32) over 8 bytes of ones, then the IP, UDP and BTH headers
with those fields set to ones, then the rest of the packet; sent least
significant byte first.

Only light standard modules are imported, and the test runs it with
"python3 -S": under TCG every import costs.
"""
import random
import socket
import struct
import sys
import zlib

ROCE_PORT = 4791
RC_SEND_ONLY = 0x04
PAYLOAD_LEN = 16                # whole words: no pad bytes


def bth(qpn, psn, variant):
    """BTH: opcode, SE/M/pad/TVer, P_Key, byte 4, DestQP, AckReq, PSN."""
    return struct.pack(">BBHB3sB3s", RC_SEND_ONLY, 0, 0xFFFF, variant,
                       qpn.to_bytes(3, "big"), 0x80, psn.to_bytes(3, "big"))


def udp(sport, length):
    return struct.pack(">HHHH", sport, ROCE_PORT, length, 0)


def ipv4(src, dst, length):
    tos, ttl = random.randrange(256), random.randrange(1, 256)
    ident = random.randrange(1, 65536)          # 0 would let the kernel pick
    return struct.pack(">BBHHHBBH4s4s", 0x45, tos, length, ident, 0x4000,
                       ttl, socket.IPPROTO_UDP, 0, src, dst)


def ipv6(src, dst, payload_len):
    tclass, flow = random.randrange(256), random.randrange(1 << 20)
    first = 6 << 28 | tclass << 20 | flow
    return struct.pack(">IHBB16s16s", first, payload_len, socket.IPPROTO_UDP,
                       random.randrange(1, 256), src, dst)


def icrc(ip_hdr, rest):
    """ICRC of IP header ip_hdr followed by UDP header, BTH and payload."""
    ip = bytearray(ip_hdr)
    if ip[0] >> 4 == 4:
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF  # TOS, TTL, checksum
    else:
        ip[0] |= 0x0F                           # traffic class, flow label
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF                            # hop limit
    rest = bytearray(rest)
    rest[6:8] = b"\xff\xff"                     # UDP checksum
    rest[8 + 4] = 0xFF                          # BTH byte 4: FECN, BECN, resv
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(rest)) & 0xFFFFFFFF


def packet(src, dst, qpn, corrupt):
    """A whole IP packet: IP, UDP, BTH, payload, ICRC (addresses packed)."""
    roce_len = 12 + PAYLOAD_LEN + 4
    sport = 0xC000 | random.randrange(0x4000)
    udp_len = 8 + roce_len
    if len(src) == 4:
        ip_hdr = ipv4(src, dst, 20 + udp_len)
    else:
        ip_hdr = ipv6(src, dst, udp_len)
    rest = (udp(sport, udp_len) +
            bth(qpn, random.randrange(1 << 24), random.randrange(256)) +
            random.randbytes(PAYLOAD_LEN))
    crc = icrc(ip_hdr, rest)
    if corrupt:
        crc ^= 1 << random.randrange(32)
    return ip_hdr + rest + struct.pack("<I", crc)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def send(kind, src, dst, qpns, count):
    fam = family(src)
    if family(dst) != fam:
        sys.exit(f"{src} and {dst}: not the same IP version")
    psrc, pdst = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    # IPPROTO_RAW: we write the IP header (for IPv4, IP_HDRINCL is implied
    # and the kernel keeps a non-zero identification).
    with socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW) as s:
        for i in range(count):
            qpn = qpns[i % len(qpns)]
            s.sendto(packet(psrc, pdst, qpn, kind == "bad-icrc"), (dst, 0))
    print(f"sent {count} {kind} packets {src} -> {dst} "
          f"QPN {qpns[0]:#x}-{qpns[-1]:#x}")


def qpn_range(arg):
    """QPN or FIRST-LAST, as a list of QP numbers."""
    first, _, last = arg.partition("-")
    first = int(first, 0)
    last = int(last, 0) if last else first
    if last < first:
        usage(f"empty QPN range {arg}")
    return list(range(first, last + 1))


def usage(msg):
    sys.exit(f"{msg}\nusage: roce_send.py [-n COUNT] [-q QPN[-LAST]] "
             "KIND SRC DST [KIND SRC DST ...]   (KIND: valid | bad-icrc)")


def main(argv):
    count, qpns = 10, [0xABCDEF]
    while argv[:1] in (["-n"], ["-q"]) and len(argv) >= 2:
        if argv[0] == "-n":
            count = int(argv[1])
        else:
            qpns = qpn_range(argv[1])
        argv = argv[2:]
    if not argv or len(argv) % 3 or \
            any(k not in ("valid", "bad-icrc") for k in argv[::3]):
        usage("arguments are KIND SRC DST triples")
    for i in range(0, len(argv), 3):
        send(argv[i], argv[i + 1], argv[i + 2], qpns, count)


if __name__ == "__main__":
    main(sys.argv[1:])
