"""Where a trained policy is: a run folder's policy.pt, a policy file given as is, or a
packaged policy by its name (policies/packaged/: generalist, cellular, quick).

Here, below the trainer that writes run folders, because every layer that loads a policy
(`lstm:` schemes, `ccgym export`, `ccgym run`) resolves its argument the same way. Imports stay
light (no torch): `ccgym eval` resolves `lstm:` arguments through here.
"""

from __future__ import annotations

import os
from pathlib import Path

from ccgym.emulators import _core
from ccgym.errors import UserError
from ccgym.files import name_problem
from ccgym.policies import packaged_policies

POLICY_FILE = "policy.pt"  # in a run folder (train/run_folder.py): the best policy so far
SCHEME_PREFIX = "lstm:"  # eval's scheme of a policy; where a policy alone is asked, it is optional


def without_scheme(argument: str) -> str:
    """A policy argument with eval's `lstm:` taken off, if it has one."""
    return argument.strip().removeprefix(SCHEME_PREFIX)


# The options a learned scheme takes after its policy, `lstm:POLICY:KEY=VALUE`, as the
# catalog's schemes take theirs (`cubic:beta=0.7`), with what each means.
POLICY_OPTIONS = {
    "compete": "a classic scheme (its name alone, e.g. bbr) run underneath; the flow sends "
               "under its window while the queue does not drain (a buffer filler beside it); "
               "none: no competitive mode (a packaged policy's catalog may give one)",
    "first": "a classic scheme (e.g. cubic) that takes over first, before compete='s: the "
             "mode hands over to compete='s when the flow's share of the link stays below 0.3 "
             "for 4 s, and back when it stays above 0.7",
    "restart": "1: compete='s classic starts afresh each time it takes over (0, the default: "
               "it has been fed the flow's ACKs all along)",
}
NO_MODE = "none"  # compete=none: the policy alone, whatever its catalog entry gives


def split_policy_options(argument: str) -> tuple[str, dict[str, str]]:
    """`POLICY[:KEY=VALUE...]` (the text after `lstm:`) -> (POLICY, {KEY: VALUE}). A trailing
    `:part` holding `=` is an option, unless the whole text names a file or folder that exists
    (which comes first, as in resolve_policy_path): a policy's path cannot end in :KEY=VALUE
    otherwise. A packaged policy given without options takes its catalog's; compete=none takes
    none. UserError for an unknown or repeated key, an empty value, or a compete= or first=
    that names no classic scheme."""
    text, options = parse_options(argument)
    packaged = packaged_policies.named(text) if not options else None
    if packaged is not None and packaged.options:
        text, options = parse_options(f"{text}:{packaged.options}")
    if options.get("compete") == NO_MODE:
        if len(options) > 1:
            others = ", ".join(f"{key}=" for key in options if key != "compete")
            raise UserError(f"lstm:{argument}: compete={NO_MODE} takes no {others}")
        return text, {}
    return text, options


def parse_options(argument: str) -> tuple[str, dict[str, str]]:
    """split_policy_options without the catalog's options."""
    text = argument.strip()
    options: dict[str, str] = {}
    while not Path(text).expanduser().exists():
        head, colon, part = text.rpartition(":")
        if not colon or "=" not in part:
            break
        key, _, value = part.partition("=")
        if key not in POLICY_OPTIONS:
            raise UserError(f"lstm:{argument}: unknown option '{key}' "
                            f"(valid: {', '.join(POLICY_OPTIONS)})")
        if key in options:
            raise UserError(f"lstm:{argument}: option '{key}' given twice")
        if not value:
            raise UserError(f"lstm:{argument}: option '{key}' needs a value ({key}=VALUE)")
        options[key] = value
        text = head
    if options.get("restart", "0") not in ("0", "1"):
        raise UserError(f"lstm:{argument}: option 'restart' must be 0 or 1")
    for key in ("restart", "first"):
        if key in options and "compete" not in options:
            raise UserError(f"lstm:{argument}: option '{key}' needs compete=SCHEME")
    for key in ("compete", "first"):
        if key in options and not (key == "compete" and options[key] == NO_MODE):
            try:
                _core.validate_classic_scheme(options[key])
            except ValueError as e:
                raise UserError(f"lstm:{argument}: {key}={options[key]}: {e}") from e
    return text, options


def with_policy_options(scheme: str, options: dict[str, str]) -> str:
    """`scheme` (lstm:POLICY) with the options of split_policy_options after it again."""
    return scheme + "".join(f":{key}={value}" for key, value in options.items())


def resolve_policy_path(argument: str | os.PathLike, what: str = "lstm:") -> Path:
    """A run folder -> its policy.pt; a file is taken as is; a packaged policy's name (a bare
    word such as generalist) -> its NAME.pt; runs/NAME that is none of these -> the newest run
    of that config holding a policy (runs/NAME__SEED__TIME).

    A file or folder that exists comes first: `lstm:quick` in a folder holding ./quick is that
    folder, not the packaged quick (its file's path, which `ccgym policies --json` gives, names
    the packaged one there). A bare word that is neither a path, a packaged name nor a run
    prefix is refused with the packaged names."""
    text = str(argument).strip()
    if not text:
        raise UserError(f"{what} give a run folder, a policy file or a packaged policy's name, "
                        "e.g. lstm:runs/NAME or lstm:generalist")
    path = Path(text).expanduser()
    problem = name_problem(path)
    if problem:
        raise UserError(f"{what}{problem}")
    policy = packaged_policies.named(text)
    if policy is not None:
        policy.require(what)
        return policy.pt
    if not path.exists() and packaged_policies.is_name(text):
        run = newest_run(path)
        if run is None:
            raise packaged_policies.unknown(text, what)
        return run / POLICY_FILE
    if not path.exists():
        path = newest_run(path) or path
    if path.is_dir():
        path = path / POLICY_FILE
        if not path.is_file():
            raise UserError(f"{what}{text}: the run folder holds no {POLICY_FILE} yet")
    elif not path.is_file():
        raise UserError(f"{what}{text}: no such run folder or policy file")
    return path


def newest_run(prefix: Path) -> Path | None:
    """The newest of the run folders PREFIX__SEED__TIME that hold a policy (by the time in
    their names, as train/run_folder.py's RunFolder.create writes it), or None."""
    if not prefix.name or not prefix.parent.is_dir():
        return None
    runs = [p for p in prefix.parent.glob(f"{prefix.name}__*__*") if (p / POLICY_FILE).is_file()]
    if not runs:
        return None
    return max(runs, key=lambda p: (p.name.split("__")[2], p.name))
