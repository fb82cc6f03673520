"""The packet log: one row per data datagram sent, as equal-length numpy columns.

The simulator and the real UDP endpoints both produce this shape, so every
metric is computed once, from logs, whatever clock the run used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

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
