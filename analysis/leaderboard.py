"""The contest's leaderboard as a text table: one group per link, best score first, and
over several links a summary of each scheme's means.

A row is a dict with `link`, `scheme` and the keys of Metrics.to_dict()
(throughput_mbps, delay_p95_ms, e2e_delay_p95_ms, score, utilization, loss,
and flows / jain_index for several flows, each flow with its scheme when schemes share
a link, and harm_throughput / harm_delay beside cubic: analysis/coexist.py), optionally `runs` (how many runs
were averaged) and `score_std` (their standard deviation). Missing, None and
NaN values print as "-".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ccgym.config_fields import is_count, is_real

OMNISCIENT = "omniscient"  # the scheme name of the bound, pinned on top of its link's group
MISSING = "-"
PERCENT = 100.0
FLOW_INDENT = "  "
COLUMN_GAP = "  "

Row = Mapping[str, Any]
# The keys a row's cells, notes and summary read as numbers.
NUMBER_KEYS = ("throughput_mbps", "delay_p95_ms", "e2e_delay_p95_ms", "score", "score_std",
               "utilization", "loss", "jain_index", "share", "duration_s", "harm_throughput",
               "harm_delay", "share_overlap")


def row_problem(row: Row) -> str | None:
    """What makes a row (from a file: ccgym eval/run --json) unprintable, else None: a number
    key holding something else, runs that is not a count, flows that are not a list of rows.
    Scores may be -inf or NaN (measure/metrics.py), so any real number passes."""
    for key in NUMBER_KEYS:
        if row.get(key) is not None and not is_real(row[key]):
            return f"{key} must be a number, got {row[key]!r}"
    runs = row.get("runs")
    if runs is not None and not is_count(runs):
        return f"runs must be a count of runs, got {runs!r}"
    flows = row.get("flows")
    if flows is not None:
        if not isinstance(flows, list) or not all(isinstance(f, dict) and "flow" in f
                                                  for f in flows):
            return "flows must be a list of rows, each with its flow's number"
        for flow in flows:
            problem = row_problem(flow)
            if problem:
                return f"flow {flow['flow']!r}: {problem}"
    return None


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
    if std is None or single or text == MISSING:
        return text
    # A marker, not "± 0.00": the note under the table says why the runs agree.
    return f"{text} {SAME_RUNS_MARK}" if _same_runs(row) else f"{text} ± {std:.2f}"


def _same_runs(row: Row) -> bool:
    return (row.get("runs") is not None and int(row["runs"]) > 1
            and _number(row.get("score_std")) == 0)


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
SAME_RUNS_MARK = "(=)"


def _scheme_cell(row: Row) -> str:
    notes = []
    if row.get("runs") is not None:
        runs = int(row["runs"])
        notes.append(f"{runs} run" if runs == 1 else f"{runs} runs")
    if len(row.get("flows") or []) > 1 and _number(row.get("jain_index")) is not None:
        notes.append(f"Jain {float(row['jain_index']):.3f}")
    if _number(row.get("harm_throughput")) is not None:
        notes.append(f"harm to cubic: throughput {float(row['harm_throughput']) * PERCENT:.0f}%, "
                     f"delay {float(row.get('harm_delay') or 0.0) * PERCENT:.0f}%")
    return f"{row['scheme']} ({', '.join(notes)})" if notes else str(row["scheme"])


def _flow_cells(flow: Row) -> list[str]:
    """A flow's sub-row: its share in the scheme column; blank where a flow has no value."""
    share = _number(flow.get("share"))
    share_text = MISSING if share is None else f"{share * PERCENT:.1f}%"
    scheme = f" {flow['scheme']}" if flow.get("scheme") else ""
    overlap = _number(flow.get("share_overlap"))
    overlap_text = "" if overlap is None else f", {overlap * PERCENT:.1f}% while all send"
    label = f"{FLOW_INDENT}flow {flow['flow']}{scheme} ({share_text} of bytes{overlap_text})"
    return [label] + [cell(flow) if key in flow else "" for _, key, cell in COLUMNS]


def _notes(rows: Sequence[Row]) -> list[str]:
    """What a reader could misread in a link's table, said under it."""
    notes = []
    if any(len(r.get("flows") or []) > 1 for r in rows):
        notes.append("flow rows: Mbit/s and delays over each flow's own time (from its first "
                     "send); the share is of the bytes delivered in the run, and 'while all "
                     "send' of those from the last start plus a 5 s ramp to the first stop")
    if any(r.get("against") for r in rows):
        notes.append("beside competitors (--against): a scheme's Mbit/s, delays and score are "
                     "its own flow's, util % is the link's (all flows); harm to cubic is against "
                     "what a second cubic flow does (0% = no more harm than cubic)")
    if any(_same_runs(r) for r in rows):
        notes.append(f"{SAME_RUNS_MARK} every run gave the same score: nothing in this link and "
                     "scheme is random, so more --runs repeat one run")
    return notes


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


def leaderboard_cells(rows: Sequence[Row]) -> tuple[list[str], list[list[str]], int]:
    """One link's leaderboard as cells, for other renderings (the HTML report): the header,
    the lines in the text table's order, and how many lines on top are the bound's."""
    header = [SCHEME_HEADER] + [header for header, _, _ in COLUMNS]
    bound = sum(1 for r in rows if str(r["scheme"]).lower() == OMNISCIENT)
    return header, _group_lines(rows), bound


def _render(table: list[list[str]], widths: list[int]) -> list[str]:
    return [COLUMN_GAP.join([cells[0].ljust(widths[0])]
                            + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]).rstrip()
            for cells in table]


def format_leaderboard(rows: Sequence[Row]) -> str:
    """The leaderboard text: per link (in order of first appearance), the omniscient
    row on top, then schemes by score, best first, with per-flow sub-rows; over several
    links, the summary (format_summary) last."""
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
        blocks.append("\n".join([f"link: {link}", rendered[0], rule] + rendered[1:]
                                + _notes(links[link])))
    summary = format_summary(rows)
    if summary:
        blocks.append(summary.rstrip("\n"))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


SUMMARY_HEADER = ["scheme", "links", "mean score", "gap to bound", "util %", "e2e p95 ms",
                  "best on"]


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def format_summary(rows: Sequence[Row]) -> str:
    """Each scheme's means over the links (score, gap to the omniscient bound's score,
    utilization, e2e p95 delay) and on how many links it scored best, best mean score
    first; the bound on top. Empty when there is only one link."""
    links = {str(row["link"]) for row in rows}
    if len(links) < 2:
        return ""
    table = [SUMMARY_HEADER] + summary_cells(rows)
    widths = [max(len(cells[i]) for cells in table) for i in range(len(SUMMARY_HEADER))]
    rendered = _render(table, widths)
    rule = "-" * max(len(text) for text in rendered)
    return "\n".join([f"summary over {len(links)} links", rendered[0], rule] + rendered[1:]) + "\n"


def summary_cells(rows: Sequence[Row]) -> list[list[str]]:
    """format_summary's lines as cells (under SUMMARY_HEADER), for other renderings."""
    links = {str(row["link"]) for row in rows}
    bound = {str(r["link"]): _number(r.get("score")) for r in rows
             if str(r["scheme"]).lower() == OMNISCIENT}
    by_scheme: dict[str, list[Row]] = {}
    for row in rows:
        by_scheme.setdefault(str(row["scheme"]), []).append(row)
    best_on: dict[str, int] = {}
    for link in links:
        ranked = sorted((r for r in rows if str(r["link"]) == link
                         and str(r["scheme"]).lower() != OMNISCIENT), key=_sort_key)
        if ranked and _number(ranked[0].get("score")) is not None:
            best_on[str(ranked[0]["scheme"])] = best_on.get(str(ranked[0]["scheme"]), 0) + 1

    def line(scheme: str, group: list[Row]) -> tuple[float | None, list[str]]:
        scores = [_number(r.get("score")) for r in group]
        gaps = [None if (b := bound.get(str(r["link"]))) is None or score is None
                else b - score for r, score in zip(group, scores)]
        mean_score = _mean(scores)
        is_bound = scheme.lower() == OMNISCIENT
        cells = [scheme, str(len(group)), _fixed(2)(mean_score),
                 MISSING if is_bound else _fixed(2)(_mean(gaps)),
                 _fixed(1, PERCENT)(_mean([_number(r.get("utilization")) for r in group])),
                 _fixed(1)(_mean([_number(r.get("e2e_delay_p95_ms")) for r in group])),
                 MISSING if is_bound else str(best_on.get(scheme, 0))]
        return mean_score, cells

    lines = {scheme: line(scheme, group) for scheme, group in by_scheme.items()}
    pinned = [cells for scheme, (_, cells) in lines.items() if scheme.lower() == OMNISCIENT]
    others = sorted(((m, cells) for scheme, (m, cells) in lines.items()
                     if scheme.lower() != OMNISCIENT),
                    key=lambda item: (item[0] is None, -(item[0] or 0.0)))
    return pinned + [cells for _, cells in others]
