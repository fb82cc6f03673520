"""The packet log: one row per data datagram sent, as equal-length numpy columns.

The simulator and the real UDP endpoints both produce this shape, so every
metric is computed once, from logs, whatever clock the run used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from ccgym.errors import UserError

# column -> dtype, in the simulator's order (emulators/cpp/simulator.hh PacketLog).
COLUMNS: dict[str, type] = {
    "flow": np.int32,
    "seq": np.int64,
    "bytes": np.int32,
    "send_ms": np.float64,     # sender clock
    "arrival_ms": np.float64,  # receiver clock; NaN: dropped or still in flight at the end
    "dropped": np.uint8,       # 1: lost (random loss or queue drop)
}


@dataclass(frozen=True)
class PacketLog:
    flow: np.ndarray
    seq: np.ndarray
    bytes: np.ndarray
    send_ms: np.ndarray
    arrival_ms: np.ndarray
    dropped: np.ndarray

    @classmethod
    def from_columns(cls, columns: Mapping[str, ArrayLike]) -> PacketLog:
        """Builds a log from a mapping of column name -> array; extra keys are ignored.

        Raises UserError naming the column when one is missing, has the wrong
        shape, or contradicts another (a dropped packet cannot have arrived).
        """
        missing = [name for name in COLUMNS if name not in columns]
        if missing:
            raise UserError(f"packet log: missing column(s) {', '.join(missing)}")
        arrays = {name: _column(name, columns[name], dtype) for name, dtype in COLUMNS.items()}
        lengths = {name: len(a) for name, a in arrays.items()}
        if len(set(lengths.values())) > 1:
            raise UserError(f"packet log: columns differ in length: {lengths}")
        log = cls(**arrays)
        log._check_consistent()
        return log

    @classmethod
    def empty(cls) -> PacketLog:
        return cls.from_columns({name: np.empty(0, dtype) for name, dtype in COLUMNS.items()})

    def __len__(self) -> int:
        return len(self.seq)

    def columns(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def flows(self) -> np.ndarray:
        """The flow ids present, ascending."""
        return np.unique(self.flow)

    def for_flow(self, flow: int) -> PacketLog:
        return self.select(self.flow == flow)

    def select(self, mask: np.ndarray) -> PacketLog:
        return PacketLog(**{name: a[mask] for name, a in self.columns().items()})

    def arrived(self, duration_ms: float | None = None) -> np.ndarray:
        """Mask of packets delivered, within [0, duration_ms) when a duration is given."""
        mask = np.isfinite(self.arrival_ms) & (self.dropped == 0)
        if duration_ms is not None:
            mask &= self.arrival_ms < duration_ms
        return mask

    def _check_consistent(self) -> None:
        if np.any(self.dropped > 1):
            raise UserError("packet log: column dropped must hold 0 or 1")
        if np.any(~np.isfinite(self.send_ms)):
            raise UserError("packet log: column send_ms must be finite")
        lost_but_arrived = (self.dropped == 1) & np.isfinite(self.arrival_ms)
        if np.any(lost_but_arrived):
            first = int(np.argmax(lost_but_arrived))
            raise UserError(f"packet log: row {first} is dropped but has an arrival_ms")


def _column(name: str, values: ArrayLike, dtype: type) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise UserError(f"packet log: column {name} must be one-dimensional, got shape {array.shape}")
    return array.astype(dtype, copy=False)


def as_packet_log(log: PacketLog | Mapping[str, ArrayLike]) -> PacketLog:
    """Accepts a PacketLog or the column mapping the simulator and endpoints produce."""
    return log if isinstance(log, PacketLog) else PacketLog.from_columns(log)


# ---------------------------------------------------------------- the UDP endpoints' logs


@dataclass(frozen=True)
class TsvLog:
    """A log of ccgym-sender or ccgym-receiver: columns by header name, and the trailer's
    `# key=value` pairs (clock_origin_ns: where the log's clock starts on the host's
    steady clock)."""

    columns: dict[str, np.ndarray]
    trailer: dict[str, str]

    def clock_origin_ms(self) -> float:
        if "clock_origin_ns" not in self.trailer:
            raise UserError("endpoint log: no clock_origin_ns in its trailer (was the program "
                            "stopped before it finished writing?)")
        return int(self.trailer["clock_origin_ns"]) / 1e6


def read_tsv_log(path: str | os.PathLike) -> TsvLog:
    """Reads an endpoint log: a header line, tab-separated rows, `# key=value ...` lines."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UserError(f"{path}: cannot read the log: {e.strerror}") from e
    if not lines:
        raise UserError(f"{path}:1: empty log (no header line)")
    header = lines[0].split("\t")
    rows: list[list[str]] = []
    trailer: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            for pair in line[1:].split():
                key, sep, value = pair.partition("=")
                if sep:
                    trailer[key] = value
            continue
        fields_ = line.split("\t")
        if len(fields_) != len(header):
            raise UserError(f"{path}:{number}: {len(fields_)} fields, the header has {len(header)}")
        rows.append(fields_)
    columns: dict[str, np.ndarray] = {}
    for i, name in enumerate(header):
        values = [r[i] for r in rows]
        if name == "event":
            columns[name] = np.array(values, dtype=str)
            continue
        try:
            columns[name] = np.array(values, dtype=np.float64)
        except ValueError as e:
            raise UserError(f"{path}: column {name}: {e}") from e
    return TsvLog(columns, trailer)


def _lost_or_in_flight(send_ms: np.ndarray, arrived: np.ndarray) -> np.ndarray:
    """Which packets that did not arrive were lost: those sent before the last packet that
    did arrive (a link delivers in order, so they cannot still be on their way). The
    others were still in flight when the run ended."""
    last_arrived_send = send_ms[arrived].max() if arrived.any() else -np.inf
    return ~arrived & (send_ms < last_arrived_send)


def _join(send_rows: dict[str, np.ndarray], seq: np.ndarray, arrival_ms: np.ndarray) -> PacketLog:
    """The packet log of the sends in `send_rows`, with the arrival (sender clock) of each
    sequence number in `seq` that arrived."""
    sent_seq = send_rows["seq"].astype(np.int64)
    seq = np.asarray(seq).astype(np.int64)
    arrival = np.full(len(sent_seq), np.nan)
    if len(sent_seq) and len(seq):
        order = np.argsort(sent_seq)
        sorted_seq = sent_seq[order]
        where = np.clip(np.searchsorted(sorted_seq, seq), 0, len(sorted_seq) - 1)
        known = sorted_seq[where] == seq  # arrivals of datagrams this sender did not log are ignored
        arrival[order[where[known]]] = np.asarray(arrival_ms)[known]
    arrived = np.isfinite(arrival)
    return PacketLog.from_columns({
        "flow": send_rows["flow"], "seq": sent_seq, "bytes": send_rows["bytes"],
        "send_ms": send_rows["send_ms"], "arrival_ms": arrival,
        "dropped": _lost_or_in_flight(send_rows["send_ms"], arrived),
    })


def _sends(sender: TsvLog) -> dict[str, np.ndarray]:
    is_send = sender.columns["event"] == "send"
    return {name: sender.columns[name][is_send] for name in ("flow", "seq", "bytes", "send_ms")}


def packet_log_from_endpoints(sender: TsvLog, receiver: TsvLog) -> PacketLog:
    """Joins a sender's and a receiver's logs from one host: arrivals are put on the
    sender's clock through both logs' clock origins (one steady clock, so exact)."""
    offset_ms = receiver.clock_origin_ms() - sender.clock_origin_ms()
    flow = int(sender.columns["flow"][0]) if len(sender.columns["flow"]) else 0
    own = receiver.columns["flow"] == flow
    return _join(_sends(sender), receiver.columns["seq"][own],
                 receiver.columns["recv_ms"][own] + offset_ms)


def packet_log_from_acks(sender: TsvLog) -> tuple[PacketLog, float]:
    """The packet log of a run whose receiver is on another host, from the sender's log
    alone, and the minimum RTT (ms).

    The two clocks are not synchronized, so one-way delays are RTT-based: the receiver
    clock's offset is chosen so that the smallest one-way delay is half the minimum RTT
    (a symmetric path at its least loaded). Queueing delay on the way out is then
    measured exactly (clock drift aside); the base delay is an estimate. A packet whose
    ACK was lost counts as lost.
    """
    columns = sender.columns
    is_ack = columns["event"] == "ack"
    seq = columns["seq"][is_ack]
    send_ms, recv_ms, ack_ms = (columns[key][is_ack] for key in ("send_ms", "recv_ms", "ack_ms"))
    if not len(seq):
        return _join(_sends(sender), seq, recv_ms), float("nan")
    min_rtt = float(np.min(ack_ms - send_ms))
    offset_ms = min_rtt / 2 - float(np.min(recv_ms - send_ms))
    return _join(_sends(sender), seq, recv_ms + offset_ms), min_rtt


# ---------------------------------------------------------------- the link shell's log

SHELL_LEAVING = 0  # direction of packets leaving the shell: the link's data direction
SHELL_ENTERING = 1


def shell_flow_names(shell: TsvLog) -> dict[int, str]:
    """Flow id -> its 5-tuple, inside first ("tcp:100.64.0.2:40000>100.64.0.1:5201"), from
    ccgym-shell-link's `# flow_N=...` lines."""
    return {int(key[len("flow_"):]): value for key, value in shell.trailer.items()
            if key.startswith("flow_") and key[len("flow_"):].isdigit()}


def packet_log_from_shell(shell: TsvLog, flows: Mapping[int, int] | None = None,
                          direction: int = SHELL_LEAVING) -> PacketLog:
    """The packet log of one direction of a link shell's log (ccgym-shell-link --log): a
    packet is 'sent' when it enters the link and 'arrives' when it leaves it, on the link's
    clock, so one-way delays are the link's own (queueing and propagation).

    flows maps the shell's flow ids to the ids the log should carry; flows not in it are
    left out (None keeps every flow as numbered). Packets still in the link when the
    shell stopped are not in its log.
    """
    columns = shell.columns
    missing = [c for c in ("direction", "flow", "seq", "bytes", "enter_ms", "exit_ms", "dropped")
               if c not in columns]
    if missing:
        raise UserError(f"link shell log: missing column(s) {', '.join(missing)}")
    keep = columns["direction"] == direction
    flow = columns["flow"].astype(np.int64)
    if flows is not None:
        keep &= np.isin(flow, list(flows))
        flow = np.array([flows.get(int(f), -1) for f in flow], dtype=np.int64)
    order = np.argsort(columns["enter_ms"][keep], kind="stable")
    return PacketLog.from_columns({
        "flow": flow[keep][order], "seq": columns["seq"][keep][order],
        "bytes": columns["bytes"][keep][order], "send_ms": columns["enter_ms"][keep][order],
        "arrival_ms": columns["exit_ms"][keep][order], "dropped": columns["dropped"][keep][order],
    })
