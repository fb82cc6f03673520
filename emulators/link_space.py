"""Link spaces: the ranges `ccgym search` draws links from, as a TOML file (configs/spaces/).

A space gives, for each dimension of a link, the values a search may pick: a range
`{ min = 1, max = 200, log = true }` (or one number, to fix it) for the rate, one-way delay,
buffer in BDPs, loss and the variability of generated cellular traces; a list for the delivery
process, the ACK path and the competitor. configs/spaces/default.toml documents every key.

A drawn link is a [[link]] table of the link-set form (emulators/links.py), so the links a
search finds, or a family drawn at random (`ccgym links sample`), are written as a link set that
every verb reads back to the same links. Drawing asks a `trial` for each value
(`suggest_float(name, low, high, log=...)` and `suggest_categorical(name, choices)`, as an
Optuna trial has them): a search's sampler decides where to look, and UniformDraws draws each
value at random, on its range's scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ccgym.emulators.links import (FIRST_CHOICES, SYNTHETIC_MODELS, Link, check_competitor,
                                   link_set_text)
from ccgym.emulators.variants import ACK_PATHS, queue_for_bdps
from ccgym.errors import UserError
from ccgym.files import find_packaged_file, read_toml, unknown_key
from ccgym.flags import MAX_TRIALS

PACKAGED_SPACES_FOLDER = "spaces"  # inside the ccgym.configs package
SPACE_SUFFIX = ".toml"
DEFAULT_SPACE = "default"
DELIVERIES = ("constant", "poisson", "cellular")  # cellular: a generated trace (generate.py)
NO_COMPETITOR = "none"
FINITE, INFINITE = "finite", "infinite"
SIGNIFICANT_DIGITS = 3  # drawn values are rounded so that a found link reads as it is

# Each range's key -> (lowest min, highest max, whether min may equal the lowest): the link
# spec parser's bounds (emulators/cpp/spec.hh) where it has them; a delay above 0, so that no
# run scores a zero delay.
RANGE_LIMITS = {
    "rate_mbps": (0.1, 10_000.0, True),
    "delay_ms": (0.0, 1000.0, False),
    "buffer_bdp": (0.0, 1000.0, False),
    "loss": (0.0, 0.5, True),
}
# The generated cellular traces' variability (emulators/generate.py CellularModel's fields).
CELLULAR_LIMITS = {
    "rate_range": (1.0, 1000.0, False),
    "volatility_per_sqrt_s": (0.0, 10.0, True),
    "mean_time_between_outages_s": (0.0, 3600.0, False),
    "mean_outage_s": (0.0, 60.0, True),
}
TRACE_S_LIMITS = (1.0, 3600.0)
DEFAULT_TRACE_S = 30.0  # as long as a run on any other link (link_facts.DEFAULT_DURATION_MS)
INTERVAL_S_LIMITS = (0.0, 3600.0, True)
LIST_KEYS = {"delivery": DELIVERIES, "ack": ACK_PATHS}
TOP_KEYS = ("description", *RANGE_LIMITS, "infinite_buffer", "delivery", "ack", "competitors",
            "first", "interval_s", "cellular")
CELLULAR_KEYS = ("trace_s", *CELLULAR_LIMITS)


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    log: bool = False

    def draw(self, trial: Any, name: str) -> float:
        if self.low == self.high:
            return self.low
        return _rounded(trial.suggest_float(name, self.low, self.high, log=self.log))


@dataclass(frozen=True)
class LinkSpace:
    path: Path
    description: str
    ranges: dict[str, Range]           # rate_mbps, delay_ms, buffer_bdp, loss
    infinite_buffer: bool              # whether an infinite buffer is a choice too
    deliveries: tuple[str, ...]
    acks: tuple[str, ...]
    competitors: tuple[str, ...]       # NO_COMPETITOR or a classic scheme
    firsts: tuple[str, ...]            # beside a competitor: which flow starts first
    interval_s: Range                  # and how many seconds later the other
    trace_s: float                     # each generated cellular trace's length
    cellular: dict[str, Range]

    @property
    def has_competitors(self) -> bool:
        return any(c != NO_COMPETITOR for c in self.competitors)

    def draw(self, trial: Any, label: str, trace_seed: int) -> dict[str, Any]:
        """A [[link]] table, each value asked of `trial`, named `label` and what sets the link
        apart (link_name); a generated trace drawn with `trace_seed`."""
        rate = self.ranges["rate_mbps"].draw(trial, "rate_mbps")
        delay = self.ranges["delay_ms"].draw(trial, "delay_ms")
        delivery = trial.suggest_categorical("delivery", list(self.deliveries))
        ack = trial.suggest_categorical("ack", list(self.acks))
        table: dict[str, Any] = {"name": label, "source": "", "delay_ms": delay}
        if delivery == "cellular":
            trace = {"model": SYNTHETIC_MODELS[0], "mean_mbps": rate, "seed": trace_seed,
                     "duration_s": self.trace_s,
                     **{key: r.draw(trial, f"cellular_{key}") for key, r in self.cellular.items()}}
            table["synthetic_trace"] = trace
            if ack == "own":  # a trace of its own for the ACKs, drawn from the same model
                table["ack_synthetic_trace"] = dict(trace)
        else:
            table.update(rate_mbps=rate, delivery=delivery)
            if ack == "own":
                table.update(ack_rate_mbps=rate, ack_delivery=delivery)
        buffer = (trial.suggest_categorical("buffer", [FINITE, INFINITE])
                  if self.infinite_buffer else FINITE)
        bdps = self.ranges["buffer_bdp"].draw(trial, "buffer_bdp") if buffer == FINITE else 0
        table["queue"] = queue_for_bdps(rate, delay, bdps)
        loss = self.ranges["loss"].draw(trial, "loss")
        if loss > 0:
            table["loss"] = loss
        competitor = trial.suggest_categorical("competitor", list(self.competitors))
        if competitor != NO_COMPETITOR:
            # One choice is no choice: the sampler is not asked (a fixed start draws nothing).
            first = (self.firsts[0] if len(self.firsts) == 1
                     else trial.suggest_categorical("first", list(self.firsts)))
            table.update(competitors=[competitor], first=first,
                         interval_s=self.interval_s.draw(trial, "interval_s"))
        table["name"] = link_name(label, table)
        return table


def _rounded(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def trace_seed(seed: int, number: int) -> int:
    """The seed of the generated trace of link `number` (at most MAX_TRIALS) drawn under
    `seed`: distinct for each (seed, number)."""
    return seed * (MAX_TRIALS + 1) + number


def rate_and_delivery(table: dict[str, Any]) -> tuple[float, str]:
    """A drawn link's mean rate (Mbit/s) and delivery process ("cellular" for a generated
    trace)."""
    trace = table.get("synthetic_trace")
    if trace:
        return float(trace["mean_mbps"]), "cellular"
    return float(table["rate_mbps"]), table["delivery"]


def link_name(label: str, table: dict[str, Any]) -> str:
    """A drawn link's name: its label (a search's trial, a family's index) and what sets the
    link apart, e.g. t12-cellular-37.2mbps-8.5ms-27pkts-beside-bbr."""
    rate, delivery = rate_and_delivery(table)
    queue = table["queue"]
    parts = [label, delivery, f"{rate:g}mbps", f"{table['delay_ms']:g}ms",
             "inf-queue" if queue == "infinite" else f"{queue.rpartition('=')[2]}pkts"]
    if table.get("loss"):
        parts.append(f"loss{table['loss']:g}")
    if "ack_delivery" in table or "ack_synthetic_trace" in table:
        parts.append("own-ack")
    parts += [f"beside-{c}" for c in table.get("competitors", [])]
    if table.get("first", FIRST_CHOICES[0]) != FIRST_CHOICES[0]:
        parts.append(f"{table['first']}-first")
    if table.get("interval_s"):
        parts.append(f"{table['interval_s']:g}s-apart")
    return "-".join(parts)


# ---------------------------------------------------------------- a random family

SAMPLE_GROUP = "sample"
SAMPLE_LABEL = "r"  # a sampled link's name starts r0, r1, ...


class UniformDraws:
    """A trial, as LinkSpace.draw asks one, that draws each value independently at random from
    a seeded stream: a range's uniformly on its scale (a log range uniformly in the
    logarithm), a list's choices alike."""

    def __init__(self, rng: Any) -> None:  # a numpy Generator
        self.rng = rng
        self.params: dict[str, Any] = {}

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        if log:
            value = math.exp(self.rng.uniform(math.log(low), math.log(high)))
        else:
            value = self.rng.uniform(low, high)
        self.params[name] = value = min(max(float(value), low), high)
        return value

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        self.params[name] = value = choices[int(self.rng.integers(len(choices)))]
        return value


def sample_tables(space: LinkSpace, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` links drawn at random from the space, as [[link]] tables r0, r1, ...: the same
    seed gives the same links, and a larger count the same first ones."""
    import numpy as np  # `ccgym links list` does without it

    if not 1 <= count <= MAX_TRIALS:  # beyond it, two links' traces would share a seed
        raise ValueError(f"count must be in 1..{MAX_TRIALS}, got {count}")
    rng = np.random.default_rng(seed)
    return [space.draw(UniformDraws(rng), f"{SAMPLE_LABEL}{number}", trace_seed(seed, number))
            for number in range(count)]


def check_starts(space: LinkSpace, links: list[Link]) -> None:
    """UserError when a link drawn from the space has a competitor that would start after the
    end of a run of the link's own length (a generated trace once, else 30 s, as `ccgym eval`
    runs it): said when the family is drawn, not when it is run."""
    from ccgym.emulators.link_facts import default_duration_ms  # numpy, as sample_tables

    for link in links:
        last_start_ms = len(link.competitors) * (link.interval_s or 0.0) * 1000.0
        duration_ms = default_duration_ms(link.spec)
        if last_start_ms >= duration_ms:
            raise UserError(f"{space.path}: interval_s {link.interval_s:g}: on link {link.name} "
                            f"the last flow would start after the run's end "
                            f"({duration_ms / 1000:g} s); give a lower interval_s max"
                            + (" or a longer cellular.trace_s" if "cellular" in space.deliveries
                               else ""))


def sample_eval_command(path: str) -> str:
    """The `ccgym eval` command that scores schemes on a family written at `path`."""
    return f"ccgym eval --links {path} --schemes SCHEMES --seed 101 --runs 2"


def sample_link_set(space: LinkSpace, count: int, seed: int, path: str) -> str:
    """`count` links drawn at random from the space (sample_tables) as a link set to be written
    at `path`; its comment says how it was drawn and how to score schemes on it."""
    tables = sample_tables(space, count, seed)
    for number, table in enumerate(tables):
        table["source"] = f"ccgym links sample, seed {seed}: link {number} of {space.path.name}"
    comment = (f"{count} links drawn at random from {space.path} by\nccgym links sample "
               f"--space {space.path} --count {count} --seed {seed}\nSchemes scored on them:"
               f"\n{sample_eval_command(path)}")
    description = f"{count} links drawn at random from {space.path.name} (seed {seed})"
    return link_set_text(SAMPLE_GROUP, description, tables, comment)


# ---------------------------------------------------------------- reading

def packaged_spaces() -> list[Path]:
    folder = Path(str(resources.files("ccgym.configs") / PACKAGED_SPACES_FOLDER))
    return sorted(p for p in folder.iterdir() if p.suffix == SPACE_SUFFIX)


def find_space(name_or_path: str) -> Path:
    """A space file from a path, or from the name of a packaged space ("default")."""
    return find_packaged_file(name_or_path, packaged_spaces(), SPACE_SUFFIX, "--space", "space",
                              "spaces")


def load_space(path: str | Path) -> LinkSpace:
    """The space a TOML file describes; UserError naming the file and the key on any problem."""
    path = Path(path)
    doc = read_toml(path, "link space")
    for key in doc:
        if key not in TOP_KEYS:
            raise unknown_key(str(path), key, TOP_KEYS)
    for key in RANGE_LIMITS:
        if key not in doc:
            raise UserError(f"{path}: missing key {key!r}")
    ranges = {key: _range(f"{path}: {key}", doc[key], RANGE_LIMITS[key]) for key in RANGE_LIMITS}
    trace_s, cellular = _cellular(path, doc.get("cellular", {}))
    competitors = _choices(path, "competitors", doc.get("competitors", [NO_COMPETITOR]), None)
    for scheme in competitors:
        if scheme != NO_COMPETITOR:
            check_competitor(scheme, f"{path}: competitors")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise UserError(f"{path}: description must be a string")
    infinite = doc.get("infinite_buffer", False)
    if not isinstance(infinite, bool):
        raise UserError(f"{path}: infinite_buffer must be true or false, got {infinite!r}")
    return LinkSpace(
        path=path, description=description, ranges=ranges, infinite_buffer=infinite,
        deliveries=_choices(path, "delivery", doc.get("delivery", ["constant"]), DELIVERIES),
        acks=_choices(path, "ack", doc.get("ack", ["clean"]), ACK_PATHS),
        competitors=competitors,
        firsts=_choices(path, "first", doc.get("first", [FIRST_CHOICES[0]]), FIRST_CHOICES),
        interval_s=_range(f"{path}: interval_s", doc.get("interval_s", 0), INTERVAL_S_LIMITS),
        trace_s=trace_s, cellular=cellular)


def _cellular(path: Path, table: Any) -> tuple[float, dict[str, Range]]:
    """[cellular]: the generated traces' length and the ranges of their variability."""
    if not isinstance(table, dict):
        raise UserError(f"{path}: cellular must be a table ([cellular])")
    for key in table:
        if key not in CELLULAR_KEYS:
            raise unknown_key(f"{path}: cellular", key, CELLULAR_KEYS)
    trace_s = _number(f"{path}: cellular.trace_s", table.get("trace_s", DEFAULT_TRACE_S),
                      TRACE_S_LIMITS)
    return trace_s, {key: _range(f"{path}: cellular.{key}", table[key], CELLULAR_LIMITS[key])
                     for key in CELLULAR_LIMITS if key in table}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(where: str, value: Any, limits: tuple[float, float]) -> float:
    if not _is_number(value) or not limits[0] <= value <= limits[1]:
        raise UserError(f"{where} must be a number in [{limits[0]:g}, {limits[1]:g}], "
                        f"got {value!r}")
    return float(value)


def _range(where: str, value: Any, limits: tuple[float, float, bool]) -> Range:
    """A range table { min, max, log } or one number (a fixed value)."""
    lowest, highest, lowest_allowed = limits
    if _is_number(value):
        value = {"min": value, "max": value}
    if not isinstance(value, dict):
        raise UserError(f"{where} must be a range {{ min = A, max = B, log = false }} or one "
                        f"number, got {value!r}")
    for key in value:
        if key not in ("min", "max", "log"):
            raise unknown_key(where, key, ("min", "max", "log"))
    for key in ("min", "max"):
        if key not in value:
            raise UserError(f"{where}: missing key {key!r}")
        number = value[key]
        if (not _is_number(number) or number > highest or number < lowest
                or (number == lowest and not lowest_allowed)):
            bounds = f"{'[' if lowest_allowed else '('}{lowest:g}, {highest:g}]"
            raise UserError(f"{where}: {key} must be a number in {bounds}, got {number!r}")
    log = value.get("log", False)
    if not isinstance(log, bool):
        raise UserError(f"{where}: log must be true or false, got {log!r}")
    if value["min"] > value["max"]:
        raise UserError(f"{where}: min {value['min']:g} is above max {value['max']:g}")
    if log and value["min"] <= 0:
        raise UserError(f"{where}: a log range needs min > 0, got {value['min']:g}")
    return Range(float(value["min"]), float(value["max"]), log)


def _choices(path: Path, key: str, value: Any, valid: tuple[str, ...] | None) -> tuple[str, ...]:
    """A non-empty list of distinct strings, each one of `valid` (None: any)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise UserError(f"{path}: {key} must be a non-empty list of names, got {value!r}")
    for item in value:
        if valid is not None and item not in valid:
            raise UserError(f"{path}: {key}: unknown {item!r}; valid: {', '.join(valid)}")
    if len(set(value)) != len(value):
        raise UserError(f"{path}: {key}: a name is given twice in {value!r}")
    return tuple(value)
