#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Send hand-made RoCE v2 packets through raw IP sockets.

    roce_send.py [-n COUNT] [-q QPN[-LAST]] [-p PSN] [-t rc|uc] [-f BYTE]
                 KIND SRC DST [KIND SRC DST ...]

Sends COUNT (default 10) RC SEND-only packets (UC ones with -t uc) to QP
number QPN (default 0xabcdef) for each KIND SRC DST triple, and prints one
line per triple.  QPN may be a range FIRST-LAST: the packets then go to
each number in turn.  KIND is "valid" (a correct ICRC) or "bad-icrc" (the
correct ICRC with one bit flipped).  SRC and DST are both IPv4 or both IPv6
addresses; SRC is written into the packet as is, and DST may be a broadcast
address.  The PSN is PSN if given, else random; the 16 payload bytes are
BYTE if given, else random.  Needs root (raw sockets).

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
SEND_ONLY = {"rc": 0x04, "uc": 0x24}
PAYLOAD_LEN = 16                # whole words: no pad bytes


def bth(opcode, qpn, psn, variant):
    """BTH: opcode, SE/M/pad/TVer, P_Key, byte 4, DestQP, AckReq, PSN."""
    return struct.pack(">BBHB3sB3s", opcode, 0, 0xFFFF, variant,
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


def packet(src, dst, qpn, opt, corrupt):
    """A whole IP packet: IP, UDP, BTH, payload, ICRC (addresses packed)."""
    roce_len = 12 + PAYLOAD_LEN + 4
    sport = 0xC000 | random.randrange(0x4000)
    udp_len = 8 + roce_len
    if len(src) == 4:
        ip_hdr = ipv4(src, dst, 20 + udp_len)
    else:
        ip_hdr = ipv6(src, dst, udp_len)
    psn = random.randrange(1 << 24) if opt["psn"] is None else opt["psn"]
    payload = (random.randbytes(PAYLOAD_LEN) if opt["fill"] is None
               else bytes([opt["fill"]]) * PAYLOAD_LEN)
    rest = (udp(sport, udp_len) +
            bth(SEND_ONLY[opt["transport"]], qpn, psn,
                random.randrange(256)) + payload)
    crc = icrc(ip_hdr, rest)
    if corrupt:
        crc ^= 1 << random.randrange(32)
    return ip_hdr + rest + struct.pack("<I", crc)


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def send(kind, src, dst, opt):
    fam = family(src)
    if family(dst) != fam:
        sys.exit(f"{src} and {dst}: not the same IP version")
    psrc, pdst = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    # IPPROTO_RAW: we write the IP header (for IPv4, IP_HDRINCL is implied
    # and the kernel keeps a non-zero identification).
    with socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW) as s:
        if fam == socket.AF_INET:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        qpns = opt["qpn"]
        for i in range(opt["count"]):
            s.sendto(packet(psrc, pdst, qpns[i % len(qpns)], opt,
                            kind == "bad-icrc"), (dst, 0))
    print(f"sent {opt['count']} {kind} {opt['transport'].upper()} packets "
          f"{src} -> {dst} QPN {qpns[0]:#x}-{qpns[-1]:#x}")


def qpn_range(arg):
    """QPN or FIRST-LAST, as a list of QP numbers."""
    first, _, last = arg.partition("-")
    first = int(first, 0)
    last = int(last, 0) if last else first
    if last < first:
        usage(f"empty QPN range {arg}")
    return list(range(first, last + 1))


def usage(msg):
    sys.exit(f"{msg}\nusage: roce_send.py [-n COUNT] [-q QPN[-LAST]] [-p PSN] "
             "[-t rc|uc] [-f BYTE] KIND SRC DST [KIND SRC DST ...]   "
             "(KIND: valid | bad-icrc)")


OPTIONS = {"-n": ("count", int),
           "-q": ("qpn", qpn_range),
           "-p": ("psn", lambda v: int(v, 0) & 0xFFFFFF),
           "-t": ("transport", lambda v: v),
           "-f": ("fill", lambda v: int(v, 0) & 0xFF)}


def main(argv):
    opt = {"count": 10, "qpn": [0xABCDEF], "psn": None, "transport": "rc",
           "fill": None}
    while argv[:1] and argv[0] in OPTIONS and len(argv) >= 2:
        key, conv = OPTIONS[argv[0]]
        opt[key] = conv(argv[1])
        argv = argv[2:]
    if opt["transport"] not in SEND_ONLY:
        usage(f"-t {opt['transport']}: not rc or uc")
    if not argv or len(argv) % 3 or \
            any(k not in ("valid", "bad-icrc") for k in argv[::3]):
        usage("arguments are KIND SRC DST triples")
    for i in range(0, len(argv), 3):
        send(argv[i], argv[i + 1], argv[i + 2], opt)


if __name__ == "__main__":
    main(sys.argv[1:])
