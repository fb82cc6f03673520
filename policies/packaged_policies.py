"""The reference policies ccgym ships in policies/packaged/ (its catalog.toml lists them):
`lstm:NAME` in every verb that takes a policy, without training first.

Each NAME of the catalog has three files there: NAME.pt, NAME.onnx and NAME.toml, its model
card, which scripts/package_policies.py writes from run folders. The catalog lists the names
even before their files are there, so that a name without files is refused as such, and an
unknown name is refused with the names there are.

Imports stay light (no torch): policies/policy_path.py resolves `lstm:NAME` through here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccgym.errors import UserError
from ccgym.files import read_toml

FOLDER = Path(__file__).resolve().parent / "packaged"
CATALOG_FILE = FOLDER / "catalog.toml"
SUFFIXES = (".pt", ".onnx", ".toml")  # the policy, its export, its model card
# What may name a packaged policy: a bare word, never a path (so `lstm:runs/x` is never one).
NAME = re.compile(r"[a-z][a-z0-9_-]*")
MAKER = "scripts/package_policies.py"


@dataclass(frozen=True)
class PackagedPolicy:
    name: str
    summary: str
    config: str  # the training config (configs/train/CONFIG.toml) its runs were trained with
    seeds: tuple[int, ...]  # one seed: that run's policy; several: their ensemble
    options: str = ""  # KEY=VALUE:... that `lstm:NAME` without options runs with

    def file(self, suffix: str) -> Path:
        return FOLDER / f"{self.name}{suffix}"

    @property
    def pt(self) -> Path:
        return self.file(".pt")

    @property
    def onnx(self) -> Path:
        return self.file(".onnx")

    @property
    def card(self) -> Path:
        return self.file(".toml")

    def missing(self) -> list[str]:
        """The names of its files that are not here."""
        return [self.file(s).name for s in SUFFIXES if not self.file(s).is_file()]

    def read_card(self) -> dict[str, Any]:
        return read_toml(self.card, "model card")

    def require(self, what: str = "lstm:") -> None:
        """UserError unless all three files are here."""
        missing = self.missing()
        if missing:
            raise UserError(f"{what}{self.name}: the packaged policy is not there yet "
                            f"(no {', '.join(missing)} in {FOLDER}; {MAKER} makes them)")


def catalog() -> list[PackagedPolicy]:
    """Every packaged policy's entry, in the catalog's order, its files there or not."""
    doc = read_toml(CATALOG_FILE, "catalog of packaged policies")
    return [PackagedPolicy(name, entry["summary"], entry["config"], tuple(entry["seeds"]),
                           entry.get("options", ""))
            for name, entry in doc.items()]


def names() -> list[str]:
    return [p.name for p in catalog()]


def present() -> list[PackagedPolicy]:
    """The packaged policies whose three files are here."""
    return [p for p in catalog() if not p.missing()]


def lookup(name: str) -> PackagedPolicy | None:
    """The catalog's entry NAME, or None: the catalog read once."""
    return next((policy for policy in catalog() if policy.name == name), None)


def named(text: str) -> PackagedPolicy | None:
    """The packaged policy that a policy argument names, or None: a file or folder of that
    name comes first (`lstm:quick` in a folder holding ./quick is that folder)."""
    if not is_name(text) or Path(text).expanduser().exists():
        return None
    return lookup(text)


def find(name: str, what: str = "lstm:") -> PackagedPolicy:
    """The catalog's entry NAME; UserError naming the packaged policies if there is none."""
    policy = lookup(name)
    if policy is None:
        raise unknown(name, what)
    return policy


def unknown(name: str, what: str = "lstm:") -> UserError:
    return UserError(f"{what}{name}: no such run folder, policy file or packaged policy "
                     f"(packaged: {', '.join(names())}; `ccgym policies` lists them)")


def is_name(text: str) -> bool:
    """Whether text could name a packaged policy (a bare word, no folder, no suffix)."""
    return NAME.fullmatch(text) is not None


def shipped_onnx(pt: Path) -> Path | None:
    """The ONNX export shipped beside a packaged policy's .pt, or None for any other file:
    a run folder's policy.onnx may be older than its policy.pt, a packaged one is not."""
    onnx = pt.with_suffix(".onnx")
    return onnx if pt.resolve().parent == FOLDER and onnx.is_file() else None


def headline(card: dict[str, Any]) -> str:
    """The card's figure that `ccgym policies` shows on the policy's line."""
    return str(card.get("headline", "no figures on its card"))
