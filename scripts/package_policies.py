"""Packages a reference policy (policies/packaged/catalog.toml) from its training runs: NAME.pt,
NAME.onnx and NAME.toml, its model card, into policies/packaged/.

  .venv/bin/python scripts/package_policies.py NAME RUN_DIR [RUN_DIR...] [--commit SHA]
      [--suite-json SUITE.json] [--figures FIGURES.toml] [--out DIR]

The run folders must be runs of the catalog's config for NAME, one per seed it lists, with the
same config apart from the seed. Then:
1. NAME.pt: the run's policy.pt, or with several runs their ensemble (`ccgym ensemble`);
2. NAME.onnx: `ccgym export` (checked against PyTorch with onnxruntime);
3. the check figures: `ccgym eval` of the policy on each of CHECK_LINKS, as the card's commands
   say (tests/policies/test_packaged.py runs them again);
4. NAME.toml: the card. It holds the config, seeds, the catalog's options, commit, each
   run's machine.json (CPU, instruction sets, library versions), the files' sizes and SHA-256,
   the check figures, and, when given, the suite's per-group figures from `ccgym suite --json`
   (--suite-json: a suite that ran the policy as lstm:NAME, e.g. after packaging, then package
   again with it) and further figures (--figures: a TOML file of [[figures]] what, value,
   command, e.g. the shared-link benchmarks' figures). Its headline (what `ccgym policies`
   shows): the suite's mean margin over the best baseline when the suite is given, else the
   check scores.
The three files are written together at the end: a failure leaves the folder as it was.

The commit is each run's machine.json "commit" when it has one (`ccgym train` writes it from
a git checkout), else --commit; with neither the script refuses. Every mistake: one line,
exit status 2. Rebuilding every reference policy: docs/usage.md, "Packaged policies".
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ccgym.errors import UserError
from ccgym.files import read_toml, toml_value
from ccgym.policies.packaged_policies import FOLDER, SUFFIXES, PackagedPolicy, find
from ccgym.train.run_folder import MACHINE_FILE, RunFolder

# Two links every card is checked on: one of the deployment example, one far from it
# (four times the rate, three times the delay). Constant links need no shared data.
CHECK_LINKS = ("rate_mbps=12,delay_ms=20", "rate_mbps=48,delay_ms=60")
CHECK_DURATION_S = 30.0
CARD_HEADER = ("# Model card of a packaged ccgym policy, written by scripts/package_policies.py\n"
               "# (not by hand: package again to change it).")


def ccgym(*words: str) -> str:
    """Runs `ccgym WORDS...` and returns its standard output; UserError with its error line."""
    done = subprocess.run([sys.executable, "-m", "ccgym.cli", *words], capture_output=True,
                          text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"`{shlex.join(['ccgym', *words])}` failed: {last}")
    return done.stdout


def run_folders(policy: PackagedPolicy, arguments: list[str]) -> list[tuple[RunFolder, Any]]:
    """The run folders with their configs, checked against the catalog: its config, one run per
    seed, configs equal apart from the seed."""
    runs = [RunFolder.existing(a, "RUN_DIR") for a in arguments]
    configs = [run.load_config() for run in runs]
    for run, config in zip(runs, configs):
        if config.run.name != policy.config:
            raise UserError(f"{run.path}: a run of {config.run.name}, but {policy.name} is made "
                            f"from {policy.config} (policies/packaged/catalog.toml)")
        if not run.policy.is_file():
            raise UserError(f"{run.path}: holds no policy.pt yet")
    seeds = sorted(c.run.seed for c in configs)
    if seeds != sorted(policy.seeds):
        raise UserError(f"{policy.name} is made from seeds {list(policy.seeds)} of {policy.config}, "
                        f"the runs given are seeds {seeds}")
    flat = [{k: v for k, v in c.flat().items() if k != "run.seed"} for c in configs]
    for run, other in zip(runs[1:], flat[1:]):
        differing = sorted(k for k in flat[0] if flat[0][k] != other.get(k))
        if differing:
            raise UserError(f"{run.path}: its config differs from {runs[0].path}'s in "
                            f"{', '.join(differing)}: an ensemble's runs differ in the seed only")
    return list(zip(runs, configs))


def machine_and_commit(run: RunFolder, commit: str | None) -> tuple[dict[str, Any], str]:
    path = run.path / MACHINE_FILE
    if not path.is_file():
        raise UserError(f"{run.path}: no {MACHINE_FILE} (the machine and libraries it trained on)")
    machine = json.loads(path.read_text())
    found = machine.pop("commit", None) or commit
    if not found:
        raise UserError(f"{run.path}: its {MACHINE_FILE} names no commit: give --commit SHA, "
                        "the commit of the ccgym that trained it")
    # TOML has no null: a library that was not installed is said so.
    machine["libraries"] = {k: v or "not installed" for k, v in machine.get("libraries", {}).items()}
    return machine, found


def check_figures(policy: PackagedPolicy, pt: Path) -> list[dict[str, Any]]:
    """Each check link's score, from the command the card gives (run here on the staged file,
    with the catalog's options that lstm:NAME runs with)."""
    staged = f"{pt}:{policy.options}" if policy.options else str(pt)
    figures = []
    for link in CHECK_LINKS:
        words = ["eval", "--link", link, "--schemes", "lstm:{}", "--duration-s",
                 f"{CHECK_DURATION_S:g}", "--json", "-", "--no-progress"]
        rows = json.loads(ccgym(*[w.format(staged) for w in words]))
        score = next(r["score"] for r in rows if r["scheme"] == f"lstm:{staged}")
        figures.append({"link": link, "score": round(float(score), 4),
                        "command": shlex.join(["ccgym", *[w.format(policy.name) for w in words]])})
    return figures


def suite_figures(path: Path, name: str) -> tuple[list[dict[str, Any]], str]:
    """Per group: the policy's mean score and the best baseline's; and the suite's command."""
    doc = json.loads(path.read_text())
    scheme = f"lstm:{name}"
    if scheme not in doc.get("options", {}).get("policies", []):
        raise UserError(f"--suite-json {path}: the suite did not run {scheme} (run `ccgym suite "
                        f"--policies {scheme} --json {path}` after packaging once)")
    groups = []
    for group, summary in doc["summary"].items():
        by_scheme = {e["scheme"]: e for e in summary["schemes"]}
        best = summary.get("best_baseline")
        policy = by_scheme.get(scheme, {}).get("mean_score")
        if policy is None or best is None:
            continue
        groups.append({"group": group, "links": summary["links"], "score": round(policy, 4),
                       "best_baseline": best,
                       "best_baseline_score": round(by_scheme[best]["mean_score"], 4)})
    return groups, doc["options"]["command"]


def extra_figures(path: Path) -> list[dict[str, Any]]:
    figures = read_toml(path, "figures file").get("figures", [])
    for i, figure in enumerate(figures):
        missing = {"what", "value", "command"} - set(figure)
        if missing:
            raise UserError(f"{path}: figures[{i}] has no {', '.join(sorted(missing))}")
    return figures


def headline(checks: list[dict[str, Any]], groups: list[dict[str, Any]]) -> str:
    if groups:
        margin = sum(g["score"] - g["best_baseline_score"] for g in groups) / len(groups)
        ahead = sum(g["score"] > g["best_baseline_score"] for g in groups)
        return (f"suite: {margin:+.2f} against each group's best baseline on average, ahead "
                f"in {ahead} of {len(groups)} groups")
    return "score " + ", ".join(f"{c['score']:.2f} on {c['link']}" for c in checks)


def sections(config: Any) -> dict[str, dict[str, Any]]:
    """The resolved config's sections the run used, without the seed (the card's seeds)."""
    out: dict[str, dict[str, Any]] = {}
    for dotted, value in config.flat().items():
        section, key = dotted.split(".", 1)
        if dotted != "run.seed":
            out.setdefault(section, {})[key] = value
    return out


def file_facts(path: Path) -> dict[str, Any]:
    return {"file": path.name, "bytes": path.stat().st_size,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def table_lines(name: str, table: dict[str, Any], header: str = "[{}]") -> list[str]:
    """[name] with its values (no header when it has none but tables), then each value that
    is a table as [name.key]."""
    values = [f"{k} = {toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    lines = ["", header.format(name), *values] if values or header != "[{}]" else []
    for key, value in table.items():
        if isinstance(value, dict):
            lines += table_lines(f"{name}.{key}", value)
    return lines


def card_text(card: dict[str, Any]) -> str:
    """The card as TOML: scalars first, then tables, then arrays of tables."""
    lines = [CARD_HEADER, ""]
    scalars = {k: v for k, v in card.items() if not isinstance(v, dict | list) or
               (isinstance(v, list) and not (v and isinstance(v[0], dict)))}
    lines += [f"{k} = {toml_value(v)}" for k, v in scalars.items()]
    for key, value in card.items():
        if isinstance(value, dict):
            lines += table_lines(key, value)
    for key, value in card.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                lines += table_lines(key, item, "[[{}]]")
    return "\n".join(lines) + "\n"


def package(args: argparse.Namespace) -> Path:
    policy = find(args.name, "")
    runs = run_folders(policy, args.runs)
    described = [machine_and_commit(run, args.commit) for run, _ in runs]
    commits = sorted({commit for _, commit in described})
    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="ccgym-package-") as tmp:
        stage = Path(tmp)
        pt, onnx = stage / f"{policy.name}.pt", stage / f"{policy.name}.onnx"
        if len(runs) == 1:
            shutil.copyfile(runs[0][0].policy, pt)
            made = "the run's policy.pt"
        else:
            ccgym("ensemble", *[str(run.path) for run, _ in runs], "-o", str(pt))
            made = f"`ccgym ensemble` of the {len(runs)} runs' policy.pt"
        ccgym("export", str(pt), "-o", str(onnx))
        checks = check_figures(policy, pt)
        groups, suite_command = (suite_figures(Path(args.suite_json), policy.name)
                                 if args.suite_json else ([], ""))
        config = runs[0][1]
        card: dict[str, Any] = {
            "name": policy.name, "summary": policy.summary, "made": made,
            "headline": headline(checks, groups),
            "config": policy.config, "seeds": sorted(c.run.seed for _, c in runs),
            **({"options": policy.options} if policy.options else {}),
            "commit": commits[0] if len(commits) == 1 else commits,
            "packaged": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": shlex.join(["python", "scripts/package_policies.py", *sys.argv[1:]]),
            "files": {"pt": file_facts(pt), "onnx": file_facts(onnx)},
            "training_config": sections(config),
            "runs": [{"folder": run.path.name, "seed": c.run.seed, "commit": commit,
                      "machine": machine}
                     for (run, c), (machine, commit) in zip(runs, described)],
            "check": checks,
        }
        if groups:
            card["suite_command"] = suite_command
            card["suite"] = groups
        if args.figures:
            card["figures"] = extra_figures(Path(args.figures))
        (stage / f"{policy.name}.toml").write_text(card_text(card))
        out.mkdir(parents=True, exist_ok=True)
        news = [out / f"{policy.name}{suffix}.new" for suffix in SUFFIXES]
        try:  # all three copied beside the old before any replaces it
            for suffix, new in zip(SUFFIXES, news):
                shutil.copyfile(stage / f"{policy.name}{suffix}", new)
        except BaseException:
            for new in news:
                new.unlink(missing_ok=True)
            raise
        for suffix, new in zip(SUFFIXES, news):
            new.replace(out / f"{policy.name}{suffix}")
    return out / f"{policy.name}.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", metavar="NAME", help="a name of policies/packaged/catalog.toml")
    parser.add_argument("runs", metavar="RUN_DIR", nargs="+", help="its training runs")
    parser.add_argument("--commit", help="the commit that trained the runs, where their "
                                         "machine.json names none")
    parser.add_argument("--suite-json", metavar="SUITE.json",
                        help="`ccgym suite --json` output that ran lstm:NAME")
    parser.add_argument("--figures", metavar="FIGURES.toml",
                        help="more figures: [[figures]] what, value, command")
    parser.add_argument("--out", default=str(FOLDER), help=f"where to write (default {FOLDER})")
    args = parser.parse_args()
    try:
        card = package(args)
    except UserError as e:
        print(f"package_policies: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {card} and the policy's .pt and .onnx beside it")
    print(read_toml(card)["headline"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
