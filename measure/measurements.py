"""Measurements to calibrate against: the rows of `ccgym run --json` files, averaged per scheme.

Every file must name one path (the rows' `link`); the bound (omniscient) and simulated twins are
not measurements. Anything that cannot be fitted is a UserError naming the file and the row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccgym.emulators import _core
from ccgym.errors import UserError

# Rows of a `ccgym run --json` file that are not measurements of a scheme on the path.
NOT_MEASURED_SCHEMES = ("omniscient",)
NOT_MEASURED_MODES = ("simulated",)
MIN_SCHEMES = 2  # one scheme cannot tell rate, queue and loss apart


@dataclass
class Measured:
    """One scheme on the path: the means over its measured runs."""

    scheme: str
    throughput_mbps: float
    delay_p95_ms: float
    duration_s: float
    runs: int
    files: list[str] = field(default_factory=list)
    loss: float | None = None  # the measured loss rate, when the rows have it


@dataclass
class Measurements:
    path: str  # the `link` the rows name: every file must name the same one
    schemes: list[Measured]
    files: list[str]

    def only(self, names: Sequence[str]) -> Measurements:
        chosen = [m for m in self.schemes if m.scheme in names]
        return Measurements(self.path, chosen, self.files)


def _number(row: dict[str, Any], key: str, where: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        if key == "duration_s" and key not in row:
            raise UserError(f"{where}: no duration_s: write the file with this ccgym's "
                            f"`ccgym run --json`")
        raise UserError(f"{where}: {key} must be a finite number, got {value!r}")
    return float(value)


def _check_scheme(scheme: str, where: str) -> None:
    try:
        _core.validate_scheme(scheme)
    except ValueError as e:
        raise UserError(f"{where}: scheme {scheme!r} cannot be simulated: {e} "
                        f"(calibrate simulates the classic schemes)") from None


def _load_rows(file: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(Path(file).read_text())
    except FileNotFoundError:
        raise UserError(f"{file}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{file}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{file}: not JSON: {e}") from None
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise UserError(f"{file}: expected a list of rows, as `ccgym run --json` writes")
    return doc


def _measured_rows(file: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, row) of each measured scheme in a file: not the bound, not a simulated twin."""
    out = []
    for index, row in enumerate(_load_rows(file)):
        where = f"{file}: row {index + 1}"
        if not isinstance(row.get("scheme"), str) or not isinstance(row.get("link"), str):
            raise UserError(f"{where}: a row needs 'link' and 'scheme' strings")
        if row["scheme"] in NOT_MEASURED_SCHEMES or row.get("mode") in NOT_MEASURED_MODES:
            continue
        out.append((f"{where} ({row['scheme']})", row))
    if not out:
        raise UserError(f"{file}: no measured scheme in it")
    return out


def read_measurements(paths: Sequence[str | Path], schemes: Sequence[str] | None = None
                      ) -> Measurements:
    """The measured schemes of `ccgym run --json` files (several runs of a scheme are averaged);
    UserError naming the file and row on anything that cannot be fitted."""
    if not paths:
        raise UserError("no measurements given")
    rows_by_scheme: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    first: tuple[str, str] | None = None  # (the path the rows name, the file that named it)
    for file in map(str, paths):
        for where, row in _measured_rows(file):
            if first is None:
                first = (row["link"], file)
            elif row["link"] != first[0]:
                raise UserError(f"{where}: measured on link {row['link']!r}, but {first[1]} on "
                                f"{first[0]!r}: calibrate fits one path at a time")
            rows_by_scheme.setdefault(row["scheme"], []).append((where, row))
    assert first is not None
    if schemes:
        unknown = [s for s in schemes if s not in rows_by_scheme]
        if unknown:
            raise UserError(f"--schemes: {', '.join(unknown)} not measured; measured: "
                            f"{', '.join(rows_by_scheme)}")
        rows_by_scheme = {s: rows_by_scheme[s] for s in schemes}
    measured = [_mean_of_runs(scheme, rows) for scheme, rows in rows_by_scheme.items()]
    if len(measured) < MIN_SCHEMES:
        raise UserError(f"measurements of at least {MIN_SCHEMES} schemes are needed, got only "
                        f"{', '.join(m.scheme for m in measured)}: one scheme cannot tell the "
                        f"rate, the queue and the loss apart")
    return Measurements(first[0], measured, [str(p) for p in paths])


def _mean_of_runs(scheme: str, rows: list[tuple[str, dict[str, Any]]]) -> Measured:
    weights, tputs, delays, durations, files, losses = [], [], [], [], [], []
    for where, row in rows:
        _check_scheme(scheme, where)
        tput = _number(row, "throughput_mbps", where)
        if tput <= 0:
            raise UserError(f"{where}: delivered no bytes: nothing to fit")
        delay = _number(row, "delay_p95_ms", where)
        if delay <= 0:
            raise UserError(f"{where}: delay_p95_ms must be positive, got {delay}")
        duration = _number(row, "duration_s", where)
        if duration <= 0:
            raise UserError(f"{where}: duration_s must be positive, got {duration}")
        runs = row.get("runs", 1)
        weights.append(runs if isinstance(runs, int) and runs > 0 else 1)
        tputs.append(tput)
        delays.append(delay)
        durations.append(duration)
        files.append(where.split(": row")[0])
        loss = row.get("loss")
        losses.append(float(loss) if isinstance(loss, (int, float)) and math.isfinite(loss)
                      and 0 <= loss <= 1 else None)

    def mean(values: list[float]) -> float:
        return sum(w * v for w, v in zip(weights, values)) / sum(weights)

    loss = mean(losses) if None not in losses else None  # type: ignore[arg-type]
    return Measured(scheme, mean(tputs), mean(delays), max(durations), sum(weights), files, loss)
