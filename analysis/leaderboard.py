"""The contest's leaderboard as a text table: one group per link, best score first.

A row is a dict with `link`, `scheme` and the keys of Metrics.to_dict()
(throughput_mbps, delay_p95_ms, e2e_delay_p95_ms, score, utilization, loss,
and flows / jain_index for several flows), optionally `runs` (how many runs
were averaged) and `score_std` (their standard deviation). Missing, None and
NaN values print as "-".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

OMNISCIENT = "omniscient"  # the scheme name of the bound, pinned on top of its link's group
MISSING = "-"
PERCENT = 100.0
FLOW_INDENT = "  "
COLUMN_GAP = "  "

Row = Mapping[str, Any]


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _fixed(digits: int, scale: float = 1.0) -> Callable[[Any], str]:
    def fmt(value: Any) -> str:
        number = _number(value)
        if number is None:
            return MISSING
        return f"{number * scale:.{digits}f}"
    return fmt


def _score_cell(row: Row) -> str:
    """The score, with its spread over runs when there were several."""
    text = _fixed(2)(row.get("score"))
    std = _number(row.get("score_std"))
    single = row.get("runs") is not None and int(row["runs"]) <= 1
    return text if std is None or single or text == MISSING else f"{text} ± {std:.2f}"


def _key_cell(key: str, digits: int, scale: float = 1.0) -> Callable[[Row], str]:
    fmt = _fixed(digits, scale)
    return lambda row: fmt(row.get(key))


# (header, the row key it shows, cell of a row); the scheme column comes first, left-aligned.
COLUMNS: list[tuple[str, str, Callable[[Row], str]]] = [
    ("Mbit/s", "throughput_mbps", _key_cell("throughput_mbps", 2)),
    ("p95 delay ms", "delay_p95_ms", _key_cell("delay_p95_ms", 1)),
    ("e2e p95 ms", "e2e_delay_p95_ms", _key_cell("e2e_delay_p95_ms", 1)),
    ("score", "score", _score_cell),
    ("util %", "utilization", _key_cell("utilization", 1, PERCENT)),
    ("loss %", "loss", _key_cell("loss", 2, PERCENT)),
]
SCHEME_HEADER = "scheme"


def _scheme_cell(row: Row) -> str:
    notes = []
    if row.get("runs") is not None:
        runs = int(row["runs"])
        notes.append(f"{runs} run" if runs == 1 else f"{runs} runs")
    if len(row.get("flows") or []) > 1 and _number(row.get("jain_index")) is not None:
        notes.append(f"Jain {float(row['jain_index']):.3f}")
    return f"{row['scheme']} ({', '.join(notes)})" if notes else str(row["scheme"])


def _flow_cells(flow: Row) -> list[str]:
    """A flow's sub-row: its share in the scheme column; blank where a flow has no value."""
    share = _number(flow.get("share"))
    share_text = MISSING if share is None else f"{share * PERCENT:.1f}%"
    label = f"{FLOW_INDENT}flow {flow['flow']} ({share_text} of throughput)"
    return [label] + [cell(flow) if key in flow else "" for _, key, cell in COLUMNS]


def _sort_key(row: Row) -> tuple[bool, float]:
    """Best score first; missing scores last (-inf already sorts last)."""
    score = _number(row.get("score"))
    return (score is None, -(score if score is not None else 0.0))


def _group_lines(rows: Sequence[Row]) -> list[list[str]]:
    pinned = [r for r in rows if str(r["scheme"]).lower() == OMNISCIENT]
    ranked = sorted((r for r in rows if str(r["scheme"]).lower() != OMNISCIENT), key=_sort_key)
    lines = []
    for row in pinned + ranked:
        lines.append([_scheme_cell(row)] + [cell(row) for _, _, cell in COLUMNS])
        flows = row.get("flows") or []
        if len(flows) > 1:
            lines.extend(_flow_cells(f) for f in flows)
    return lines


def _render(table: list[list[str]], widths: list[int]) -> list[str]:
    return [COLUMN_GAP.join([cells[0].ljust(widths[0])]
                            + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]).rstrip()
            for cells in table]


def format_leaderboard(rows: Sequence[Row]) -> str:
    """The leaderboard text: per link (in order of first appearance), the omniscient
    row on top, then schemes by score, best first, with per-flow sub-rows."""
    links: dict[str, list[Row]] = {}
    for row in rows:
        links.setdefault(str(row["link"]), []).append(row)
    header = [SCHEME_HEADER] + [header for header, _, _ in COLUMNS]
    groups = {link: _group_lines(group) for link, group in links.items()}
    every = [header] + [line for lines in groups.values() for line in lines]
    widths = [max(len(line[i]) for line in every) for i in range(len(header))]
    blocks = []
    for link, lines in groups.items():
        table = [header] + lines
        rendered = _render(table, widths)
        rule = "-" * max(len(line) for line in rendered)
        blocks.append("\n".join([f"link: {link}", rendered[0], rule] + rendered[1:]))
    return "\n\n".join(blocks) + ("\n" if blocks else "")
