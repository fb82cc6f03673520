"""The pieces every section of the HTML report is made of: escaped text, tables, embedded
figures, numbers, and the page around them (contents first, then the summary, then details).

Figures the report draws itself are SVG with their text as text: a throughput-delay plane
is about 20 kB, against 70 kB as a PNG. Figures it takes from a plots folder are embedded as
the files are (palette PNGs, see analysis/plots.py).
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
nav ol { columns: 2; font-size: .95em; } nav li { margin: .15em 0; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e4e4e4; text-align: right; }
th:first-child, td:first-child { text-align: left; }
table.text td, table.text th { text-align: left; }
tr.bound td { font-style: italic; background: #f6f6f6; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .85em; color: #555; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: .85em; }
.note { color: #666; font-size: .9em; }
.side { display: flex; gap: 1em; flex-wrap: wrap; } .side > div { flex: 1; min-width: 320px; }
"""
MIME_TYPES = {".png": "image/png", ".svg": "image/svg+xml"}
FIGURE_SUFFIX = ".svg"


@dataclass
class Section:
    """One part of the details, listed in the contents; `summary` is its line or table in the
    summary at the top (empty: none)."""
    title: str
    body: str
    summary: str = ""


def e(value: Any) -> str:
    return html.escape(str(value))


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], classes: Sequence[str] = (),
          kind: str = "") -> str:
    """A table; kind "text" aligns every column left (values that are words, not numbers)."""
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if i < len(classes) and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    table_class = f' class="{kind}"' if kind else ""
    return f"<table{table_class}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def text_tables(text: str) -> str:
    """A text leaderboard (`ccgym eval`'s, a run folder's leaderboard.txt) as HTML tables:
    its "link: NAME" lines become headings, its column-aligned blocks tables (columns are
    two or more spaces apart, as analysis/leaderboard.py writes them); anything else stays
    preformatted text."""
    parts = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        title = lines[0] if lines and not _is_rule(lines[1] if len(lines) > 1 else "") else ""
        rows = lines[1:] if title else lines
        cells = [re.split(r"\s{2,}", line.strip()) for line in rows if not _is_rule(line)]
        if len(cells) >= 2 and all(len(c) == len(cells[0]) for c in cells):
            parts.append((f"<h4>{e(title)}</h4>" if title else "") + table(cells[0], cells[1:]))
        else:
            parts.append(f"<pre>{e(block)}</pre>")
    return "\n".join(parts)


def _is_rule(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) == {"-"}


def label(path: Path) -> str:
    """An input's name in headings: with its folder, as several inputs share a file name."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def data_url(path: Path) -> str:
    mime = MIME_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def figure_html(image: Path, caption: str) -> str:
    return (f'<figure><img src="{data_url(image)}" alt="{e(caption)}">'
            f"<figcaption>{e(caption)}</figcaption></figure>")


class Figures:
    """Draws plots into a private temporary folder and embeds them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def embed(self, draw: Callable[[Path], None], caption: str) -> str:
        self.count += 1
        image = self.folder / f"figure{self.count}{FIGURE_SUFFIX}"
        draw(image)
        return figure_html(image, caption)


def fmt(value: Any, digits: int = 2, scale: float = 1.0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value) * scale:.{digits}f}"


def percent(value: Any) -> str:
    return fmt(value, 1, 100.0) + ("%" if value is not None else "")


def page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)}</title><style>{STYLE}</style></head>\n"
            f"<body>\n<h1>{e(title)}</h1>\n{body}\n</body></html>\n")


def assemble(title: str, intro: str, sections: Sequence[Section]) -> str:
    """Contents first, then the summary of every section that has one, then the details."""
    contents = ['<li><a href="#summary">Summary</a></li>'] + [
        f'<li><a href="#part{i}">{e(s.title)}</a></li>' for i, s in enumerate(sections, 1)]
    summaries = [s.summary for s in sections if s.summary]
    parts = [intro, f"<nav><h2>Contents</h2><ol>{''.join(contents)}</ol></nav>",
             '<section id="summary"><h2>Summary</h2>'
             + ("\n".join(summaries) or '<p class="note">Nothing to summarize.</p>')
             + "</section>"]
    parts += [f'<section id="part{i}"><h2>{e(s.title)}</h2>\n{s.body}</section>'
              for i, s in enumerate(sections, 1)]
    return page(title, "\n".join(parts))
