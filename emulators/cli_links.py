"""List link sets, show a link's statistics, generate synthetic cellular traces, draw a random
family of links from a link space.

examples:
  ccgym links                                   the packaged link sets
  ccgym links list indigo-synthetic             a set's links and their specs
  ccgym links show verizon-lte-short            a packaged link, by name
  ccgym links show rate_mbps=12,delivery=poisson,delay_ms=20
  ccgym links show --links pantheon-calibrated --json stats.json
  ccgym links generate --out traces/ --count 8 --mean-mbps 10
  ccgym links sample --count 40 --seed 7 -o family.toml
  ccgym eval --links family.toml --schemes lstm:generalist,cubic,bbr,vegas,copa --seed 101 --runs 2

A link set (--links, SET) is a TOML file or the name of a packaged one (configs/links/). A
link spec is key=value,... with the keys of emulators/cpp/spec.hh, e.g.
trace=FILE,ack_trace=FILE,delay_ms=20. Recorded traces are found through ${CCGYM_DATA}
(default: ../shared/data beside the project); generated ones are cached in $CCGYM_CACHE.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any, TextIO

from ccgym import flags
from ccgym.emulators import _core, link_names
from ccgym.emulators import links as links_mod
from ccgym.errors import UserError
from ccgym.files import atomic_path, atomic_write_json, check_not_input, human_stream, is_stdout
from ccgym.folders import output_folder

# Statistics of a generated delivery process are taken over this much of it.
GENERATED_STATS_DURATION_S = 60.0
DEFAULT_STATS_SEED = 1            # the simulator's default seed, so `show` sees what it sees
PROGRESS_MIN_COUNT = 4            # below this many traces a progress bar is only noise
DEFAULT_GENERATE_MEAN_MBPS = 8.0
DEFAULT_GENERATE_DURATION_S = 60.0
TRACE_SUFFIX_DATA = ".down"       # mahimahi's naming: data (downlink) and ACK (uplink) traces
TRACE_SUFFIX_ACK = ".up"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="links_command", metavar="COMMAND")

    p = sub.add_parser("list",
                       help="the links of a set (name, canonical spec); no SET: the sets",
                       description="Print each link of a set with its canonical spec string "
                                   "(the form every --link flag accepts).")
    p.add_argument("set", nargs="?", metavar="SET",
                   help="a link set: TOML file or packaged name (default: list the sets)")

    p = sub.add_parser("show",
                       help="a link's statistics: mean rate, 500 ms percentiles, outages, BDP",
                       description="Statistics of the data direction of one link or of every "
                                   "link of a set: mean rate (Mbit/s); the 5th, 50th and 95th "
                                   "percentiles of the throughput in 500 ms windows; the "
                                   "fraction of 500 ms windows with no delivery (outages); the "
                                   "minimum RTT (twice the one-way delay) and the bandwidth-delay "
                                   "product in 1500-byte packets. A trace is measured over one "
                                   "period; a generated process (constant, poisson, burst) over "
                                   f"{GENERATED_STATS_DURATION_S:g} s of it as the simulator "
                                   "produces it.")
    p.add_argument("link", nargs="?", metavar="SPEC|NAME",
                   help="a link spec string, or the name of a link (in --links SET if given, "
                        "else in the packaged sets)")
    p.add_argument("--links", metavar="SET", help="a link set: TOML file or packaged name")
    p.add_argument("--json", metavar="OUT", type=flags.output_file,
                   help="also write the statistics as JSON to OUT ('-': standard output only)")
    p.add_argument("--seed", type=flags.seed, default=DEFAULT_STATS_SEED,
                   help=f"seed of a generated (poisson) process (default {DEFAULT_STATS_SEED})")

    p = sub.add_parser("generate",
                       help="write synthetic cellular-like traces (.down data, .up ACKs)",
                       description="Write synthetic cellular-like mahimahi traces: for each "
                                   "seed, NAME.down (data) and NAME.up (ACKs, an independent "
                                   "draw). The model (ccgym.emulators.generate): a log-rate "
                                   "random walk reflected within a range, on/off outages, "
                                   "Poisson deliveries; its time-average is --mean-mbps. "
                                   "Prints the paths written.")
    flags.add_written_folder(p, "--out",
                             help="folder to write the traces into (created if missing; "
                                  "what an earlier command of ccgym wrote there is replaced, "
                                  "a folder holding other files refused unless --force)")
    p.add_argument("--count", type=flags.count(1, flags.MAX_TRACES), default=1, metavar="N",
                   help="number of traces, seeds K, K+1, ... (default 1)")
    p.add_argument("--mean-mbps", type=float, default=DEFAULT_GENERATE_MEAN_MBPS, metavar="X",
                   help=f"mean rate of each trace (default {DEFAULT_GENERATE_MEAN_MBPS:g})")
    p.add_argument("--ack-mean-mbps", type=float, default=None, metavar="X",
                   help="mean rate of the ACK traces (default: --mean-mbps)")
    p.add_argument("--duration-s", type=flags.duration_s, default=DEFAULT_GENERATE_DURATION_S,
                   metavar="S",
                   help="length, the period the trace repeats with "
                        f"(default {DEFAULT_GENERATE_DURATION_S:g})")
    p.add_argument("--seed", type=flags.seed, default=0, metavar="K", help="first seed (default 0)")
    _add_sample(sub)


def _add_sample(sub: Any) -> None:
    p = sub.add_parser("sample",
                       help="draw links at random from a link space, as a link set",
                       description="Draw --count links at random from a link space (the space "
                                   "`ccgym search` searches; configs/spaces/default.toml "
                                   "documents its keys): each value independently, a range's "
                                   "uniformly on its scale (a log range in the logarithm), a "
                                   "list's choices alike. Writes them as a link set every verb "
                                   "takes (--links), each link with its competitor and when it "
                                   "starts; the same --seed gives the same links, a larger "
                                   "--count the same first ones.")
    p.add_argument("--space", metavar="SPACE",
                   help="the link space: a TOML file or a packaged space's name (default: the "
                        "packaged default space)")
    p.add_argument("--count", type=flags.count(1, flags.MAX_TRIALS), required=True, metavar="N",
                   help="how many links to draw")
    p.add_argument("--seed", type=flags.seed, default=1, metavar="K",
                   help="the draw's seed (default 1)")
    p.add_argument("-o", "--output", metavar="FAMILY.toml", required=True,
                   type=flags.output((".toml",), what="a TOML link set"),
                   help="write the links as a link set ('-': standard output)")


def run(args: argparse.Namespace) -> int:
    command = getattr(args, "links_command", None)
    if command == "list" and args.set is not None:
        return _list_links(args.set)
    if command in (None, "list"):
        return _list_sets()
    if command == "show":
        return _show(args)
    if command == "generate":
        return _generate(args)
    if command == "sample":
        return _sample(args)
    raise AssertionError(f"unhandled links command {command!r}")


# ---------------------------------------------------------------- listing

def _print_table(header: list[str], rows: list[list[str]], right: Collection[int] = (),
                 file: TextIO | None = None) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()
    print(line(header), file=file)
    for row in rows:
        print(line(row), file=file)


def _list_sets() -> int:
    rows = []
    for path in links_mod.packaged_link_sets():
        info = links_mod.read_link_set_info(path)
        rows.append([path.stem, info.group, str(len(info.names)), info.description])
    _print_table(["SET", "GROUP", "LINKS", "DESCRIPTION"], rows, right={2})
    data = links_mod.data_dir()
    where = str(data) if data is not None else f"not found (set {links_mod.DATA_ENV})"
    print(f"\nshared recorded data: {where}")
    print("`ccgym links list SET` shows a set's links; --links SET selects one in every verb.")
    return 0


def _list_links(set_name: str) -> int:
    links = links_mod.load_link_set(link_names.find_link_set(set_name))
    _print_table(["NAME", "SPEC"], [[link.name, link.spec] for link in links])
    return 0


# ---------------------------------------------------------------- show

def _pick(links: list[links_mod.Link], name: str, set_name: str) -> links_mod.Link:
    for link in links:
        if link.name == name:
            return link
    raise UserError(f"no link {name!r} in {set_name}; its links: "
                    + ", ".join(link.name for link in links))


def _links_to_show(args: argparse.Namespace) -> list[links_mod.Link]:
    if args.link is None and args.links is None:
        raise UserError("show what? give a link spec, a link name, or --links SET")
    if args.link is not None and link_names.is_spec(args.link):
        if args.links is not None:
            raise UserError("give a link spec or --links SET, not both")
        return [link_names.link_from_spec(args.link, where="SPEC")]
    if args.links is not None:
        links = link_names.resolve_links(None, args.links)
        return links if args.link is None else [_pick(links, args.link, args.links)]
    return [link_names.packaged_link(args.link, "SPEC|NAME")]


def link_statistics(link: links_mod.Link, seed: int = DEFAULT_STATS_SEED) -> dict[str, Any]:
    """Statistics of a link's data direction (see `ccgym links show --help`)."""
    from ccgym.emulators import link_facts  # numpy, which `ccgym links list` does without

    delay_ms = float(_core.parse_link_spec(link.spec).delay_ms)
    trace = link_names.spec_fields(link.spec).get("trace")
    if trace:
        try:
            stamps = _core.load_trace(trace)
        except ValueError as e:
            raise UserError(f"link {link.name}: {e}") from None
        stats = link_facts.trace_statistics(stamps, delay_ms)
        stats["process"] = {"kind": "trace", "path": trace}
    else:
        duration_ms = GENERATED_STATS_DURATION_S * 1000
        times = _core.opportunities(link.spec, duration_ms, seed)
        stats = link_facts.delivery_statistics(times, duration_ms, delay_ms)
        fields = link_names.spec_fields(link.spec)
        # The canonical form omits `delivery` where the other keys imply it.
        kind = fields.get("delivery") or ("burst" if "burst_packets" in fields else "constant")
        stats["process"] = {"kind": kind, "seed": seed}
    return stats


def _describe_process(process: dict[str, Any]) -> str:
    if process["kind"] == "trace":
        return f"trace {Path(process['path']).name}"
    if process["kind"] == "poisson":
        return f"poisson, seed {process['seed']}"
    return process["kind"]


def _show(args: argparse.Namespace) -> int:
    from ccgym.emulators.link_facts import WINDOW_MS  # numpy, which `ccgym links list` does without

    results: list[dict[str, Any]]  # the JSON's links: their statistics a dict, the rest text
    links = _links_to_show(args)
    check_not_input(args.json, link_names.input_files(links, args.links), "--json")
    results = [{"name": link.name, "group": link.group, "spec": link.spec,
                "source": link.source, "statistics": link_statistics(link, args.seed)}
               for link in links]
    out = human_stream(args.json)  # the table goes to standard error under --json -
    rows = []
    for r in results:
        s = r["statistics"]
        p = s["window_mbps_percentiles"]
        rows.append([r["name"], f"{s['mean_mbps']:.2f}", f"{p['p5']:.2f}", f"{p['p50']:.2f}",
                     f"{p['p95']:.2f}", f"{100 * s['outage_fraction']:.1f}",
                     f"{s['min_rtt_ms']:g}", f"{s['bdp_packets']:.1f}",
                     _describe_process(s["process"])])
    _print_table(["LINK", "MEAN", "P5", "P50", "P95", "OUTAGE%", "MIN_RTT", "BDP", "DELIVERY"],
                 rows, right=set(range(1, 8)), file=out)
    print(f"\nrates in Mbit/s; P5/P50/P95 and OUTAGE% (no delivery) over "
          f"{WINDOW_MS:g} ms windows; MIN_RTT = 2 x one-way delay, ms; "
          "BDP in 1500-byte packets", file=out)
    if args.json is not None:
        _write_json(args.json, {"links": results})
        if not is_stdout(args.json):
            print(f"wrote {args.json}", file=out)
    return 0


def _write_json(path: Path, value: Any) -> None:
    try:
        atomic_write_json(path, value)
    except OSError as e:
        raise UserError(f"--json {path}: cannot write: {e.strerror}") from None


# ---------------------------------------------------------------- generate

def _generate(args: argparse.Namespace) -> int:
    from tqdm import tqdm  # numpy and tqdm: `ccgym links list` does without them

    from ccgym.emulators import generate

    ack_mean = args.mean_mbps if args.ack_mean_mbps is None else args.ack_mean_mbps
    for flag, value in (("--mean-mbps", args.mean_mbps), ("--ack-mean-mbps", ack_mean)):
        try:  # the link-spec parser holds the rate bounds: a trace must be a valid link
            _core.parse_link_spec(f"rate_mbps={value!r}")
        except ValueError as e:
            raise UserError(f"{flag} {value:g}: {str(e).split(': ', 1)[-1]}") from None

    names = []
    seeds = range(args.seed, args.seed + args.count)
    try:
        with output_folder(args.out, args.force) as folder:
            for seed in tqdm(seeds, desc="generating traces", unit="trace", file=sys.stderr,
                             disable=args.count < PROGRESS_MIN_COUNT):
                stem = f"cellular-{args.mean_mbps:g}mbps-seed{seed}"
                for suffix, mean, stream in ((TRACE_SUFFIX_DATA, args.mean_mbps,
                                              generate.DATA_STREAM),
                                             (TRACE_SUFFIX_ACK, ack_mean, generate.ACK_STREAM)):
                    stamps = generate.generate_cellular_trace(mean, args.duration_s, seed,
                                                              stream=stream)
                    names.append(generate.write_trace(folder / (stem + suffix), stamps).name)
    except ValueError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"--out {args.out}: cannot write: {e.strerror}") from None
    for name in names:
        print(args.out / name)
    return 0


# ---------------------------------------------------------------- sample

def _sample(args: argparse.Namespace) -> int:
    from ccgym.emulators import link_space  # numpy, which `ccgym links list` does without

    space_path = link_space.find_space(args.space or link_space.DEFAULT_SPACE)
    check_not_input(args.output, [str(space_path)], "-o")
    space = link_space.load_space(space_path)
    # The file's own name, for the command that scores it; a pipe's reader names it later.
    named = "FAMILY.toml" if is_stdout(args.output) else str(args.output)
    with atomic_path(args.output) as tmp:
        tmp.write_text(link_space.sample_link_set(space, args.count, args.seed, named))
        # The file must be a link set every verb accepts, and one it can run.
        link_space.check_starts(space, links_mod.load_link_set(tmp))
    print(f"wrote {args.output}: {args.count} links drawn at random from {space_path} (seed "
          f"{args.seed}); score schemes on them with: {link_space.sample_eval_command(named)}",
          file=human_stream(args.output))
    return 0
