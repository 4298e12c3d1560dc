"""A socket's ``struct tcp_info`` (``getsockopt(IPPROTO_TCP, TCP_INFO)``), the fields
the testbed samples.  The layout is Linux's (include/uapi/linux/tcp.h) up to
``tcpi_snd_wnd``, 232 bytes, present since Linux 5.4.

Also the congestion control's own state where it reports one
(``getsockopt(IPPROTO_TCP, TCP_CC_INFO)``): Linux's BBR gives ``struct
tcp_bbr_info``, its bandwidth estimate (bytes per second, 64 bits in two halves), its
RTprop estimate (µs) and its pacing and cwnd gains (× 256); CUBIC, Reno and an
exported program give nothing (:func:`read_bbr`: NaN)."""

from __future__ import annotations

import math
import socket
import struct
import time
from dataclasses import dataclass

#: the layout: 8 bytes of flags, 24 u32 (rto ... total_retrans), pacing_rate,
#: max_pacing_rate, bytes_acked, bytes_received, segs_out/in, notsent_bytes, min_rtt,
#: data_segs_in/out, delivery_rate, busy/rwnd_limited/sndbuf_limited times,
#: delivered, delivered_ce, bytes_sent, bytes_retrans, dsack_dups, reord_seen,
#: rcv_ooopack, snd_wnd
LAYOUT = struct.Struct("<8B24I4Q6I4Q2I2Q4I")
SIZE = LAYOUT.size  # 232
FIELDS = {  # name: index in the unpacked tuple
    "ca_state": 1, "snd_mss": 10, "lost": 14, "rtt_us": 23, "snd_ssthresh": 25, "snd_cwnd": 26, "total_retrans": 31,
    "pacing_rate": 32, "bytes_acked": 34, "min_rtt_us": 39, "data_segs_out": 41, "delivered": 46, "bytes_sent": 48,
    "bytes_retrans": 49, "reord_seen": 51,
}


#: Linux's ssthresh before the first reduction (TCP_INFINITE_SSTHRESH)
INFINITE_SSTHRESH = 0x7FFFFFFF


@dataclass(frozen=True)
class TcpInfo:
    """One sample (bytes are TCP payload bytes; times in seconds)."""

    snd_mss: int
    srtt: float          # the smoothed RTT (RFC 6298, gain 1/8)
    min_rtt: float
    snd_cwnd: int        # packets
    pacing_rate: int     # bytes/s
    bytes_sent: int      # retransmissions included
    bytes_acked: int
    bytes_retrans: int
    reord_seen: int      # reordering events the sender detected
    snd_ssthresh: float = math.nan  # packets; NaN while Linux's is "infinite" (no reduction yet)
    data_segs_out: int = 0  # data segments sent, retransmissions included
    delivered: int = 0      # segments delivered (ACKed or SACKed)

    def row(self) -> list[float]:
        """The fields of :data:`ROW`, in its order."""
        return [getattr(self, name) for name in ROW]


#: what :meth:`TcpInfo.row` gives, in this order
ROW = ("snd_mss", "srtt", "min_rtt", "snd_cwnd", "pacing_rate", "bytes_sent", "bytes_acked", "bytes_retrans",
       "reord_seen", "snd_ssthresh", "data_segs_out", "delivered")


def parse(raw: bytes) -> TcpInfo:
    v = LAYOUT.unpack(raw[:SIZE].ljust(SIZE, b"\0"))

    def f(name: str) -> int:
        return int(v[FIELDS[name]])

    ssthresh = f("snd_ssthresh")
    return TcpInfo(f("snd_mss"), f("rtt_us") / 1e6, f("min_rtt_us") / 1e6, f("snd_cwnd"), f("pacing_rate"),
                   f("bytes_sent"), f("bytes_acked"), f("bytes_retrans"), f("reord_seen"),
                   math.nan if ssthresh >= INFINITE_SSTHRESH else float(ssthresh), f("data_segs_out"),
                   f("delivered"))


def read(sock: socket.socket) -> TcpInfo:
    return parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, SIZE))


TCP_CC_INFO = 26  # include/uapi/linux/tcp.h; Python's socket module has no name for it
BBR_INFO = struct.Struct("<5I")  # bw_lo, bw_hi, min_rtt (µs), pacing_gain, cwnd_gain (× 256)
BBR_UNIT = 256
#: what :func:`read_bbr` gives, in this order
BBR_COLUMNS = ("bbr_bw", "bbr_min_rtt", "bbr_pacing_gain", "bbr_cwnd_gain")


def parse_bbr(raw: bytes) -> list[float]:
    """BtlBw (bytes/s), RTprop (s), pacing and cwnd gains; NaN for a CCA without them."""
    if len(raw) < BBR_INFO.size:
        return [math.nan] * len(BBR_COLUMNS)
    lo, hi, min_rtt, pacing, cwnd = BBR_INFO.unpack(raw[:BBR_INFO.size])
    return [float(hi << 32 | lo), min_rtt / 1e6, pacing / BBR_UNIT, cwnd / BBR_UNIT]


def read_bbr(sock: socket.socket) -> list[float]:
    return parse_bbr(sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 64))


#: one sample of a socket, as the testbed's sender takes it (:func:`sample`): ``t``
#: and ``t_read`` are the clock just before and just after ``tcp_info`` was read
SAMPLE = ("t", "t_read", *ROW, *BBR_COLUMNS)


def sample(sock: socket.socket, t0: float) -> list[float]:
    """The socket's :data:`SAMPLE` now, its times counted from the monotonic ``t0``."""
    t = time.monotonic() - t0
    info = read(sock)
    t_read = time.monotonic() - t0
    return [t, t_read, *info.row(), *read_bbr(sock)]
