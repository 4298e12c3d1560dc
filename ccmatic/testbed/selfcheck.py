"""The delay line's proof of itself, from one run's counters (docs/testbed.md):

* conservation: per direction, frames in = frames out + frames it could not send
  + frames still held when it stopped; and the kernel's counters agree: what its
  receive sockets saw is what it read plus what they dropped, and what left each
  device is what it sent;
* order: no flow's frames left out of order (IPv4 IDs), and no sender detected
  reordering (``tcpi_reord_seen``);
* timing: how late frames left against their due time (p99)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ccmatic.testbed.run import TestbedRun


@dataclass(frozen=True)
class DelayLineCheck:
    frames_in: int
    frames_out: int
    dropped: int             # receive-socket drops and failed sends
    held: int                # still held when the line stopped
    kernel_rx_unread: int    # frames the devices received that the line never read (after it stopped)
    kernel_tx_extra: int     # frames the devices sent that the line did not send (0 expected)
    reordered: int
    reord_seen: int
    late_p99_s: float
    late_over_1ms: int

    @property
    def conserved(self) -> bool:
        return self.frames_in == self.frames_out + self.dropped + self.held and self.kernel_tx_extra == 0

    @property
    def in_order(self) -> bool:
        return self.reordered == 0 and self.reord_seen == 0

    def json(self) -> dict[str, Any]:
        return {**self.__dict__, "conserved": self.conserved, "in_order": self.in_order}

    def line(self) -> str:
        return (f"delay line: {self.frames_in:,} frames in = {self.frames_out:,} out + {self.dropped} dropped + "
                f"{self.held} held ({'conserved' if self.conserved else 'NOT CONSERVED'}); "
                f"{'in order' if self.in_order else f'{self.reordered + self.reord_seen} REORDERED'}; "
                f"late p99 {self.late_p99_s * 1000:.2f} ms, {self.late_over_1ms:,} frames over 1 ms late")


def check(run: TestbedRun) -> DelayLineCheck:
    d = run.delay_line
    data, acks, drops = d["data"], d["acks"], d["socket_drops"]
    dev_a, dev_b = run.devices["a"], run.devices["b"]
    frames_in = data["in"] + acks["in"] + drops["a"] + drops["b"]
    dropped = drops["a"] + drops["b"] + data["send_failed"] + acks["send_failed"]
    rx = dev_a.get("rx_packets", 0) + dev_b.get("rx_packets", 0)
    tx = dev_a.get("tx_packets", 0) + dev_b.get("tx_packets", 0)
    return DelayLineCheck(
        frames_in=frames_in, frames_out=data["out"] + acks["out"], dropped=dropped,
        held=data["held"] + acks["held"], kernel_rx_unread=rx - frames_in,
        kernel_tx_extra=tx - (data["out"] + acks["out"]), reordered=data["reordered"] + acks["reordered"],
        reord_seen=sum(run.senders["reord_seen"]), late_p99_s=max(data["late_p99_s"], acks["late_p99_s"]),
        late_over_1ms=data["late_over_1ms"] + acks["late_over_1ms"])
