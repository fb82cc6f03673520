"""ccgym's PPO (train/ppo*.py) goes through RLlib's public doors only: it reads, sets and
overrides no private (underscored) member of RLlib, so a Ray release that moves RLlib's
insides breaks nothing here unless it moves its public API; and the installed Ray is the
minor release pyproject.toml bounds it to (the one these tests train on:
tests/train/test_ppo.py and test_ppo_multi.py train PPO for a few iterations).

The check reads the files' syntax: an underscored attribute may be read or set only on
`self` inside a ccgym class that is not an RLlib subclass and defines it; a class deriving
(directly or through ccgym's classes) from anything imported from ray may define no
underscored name but the RLModule hooks RLlib documents as the methods a custom module
implements (RLModule's forward_* call them; "override this method" in its docstrings);
nothing underscored is imported from ray, nor named as a string to getattr and kin."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import ray
from packaging.requirements import Requirement

import ccgym.train

PPO_FILES = sorted(Path(ccgym.train.__file__).parent.glob("ppo*.py"))
PYPROJECT = Path(ccgym.train.__file__).parents[1] / "pyproject.toml"
# RLModule's documented override hooks (ray.rllib.core.rl_module.rl_module.RLModule).
RLMODULE_HOOKS = frozenset({"_forward", "_forward_train", "_forward_inference",
                            "_forward_exploration"})
NAME_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def rooted_at(node: ast.expr, names: set[str]) -> bool:
    """Whether a base class expression (a name or a dotted path) starts at one of the names."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names


def class_defined_names(cls: ast.ClassDef) -> set[str]:
    """The names a class body defines: its methods and class attributes, and what its
    methods assign to self."""
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in cls.body:
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in cls.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id == "self"):
            names.add(node.attr)
    return names


def private_rllib_uses(sources: dict[str, str]) -> list[str]:
    """'file:line: what' for each use of a private RLlib member in the sources (file name ->
    Python source), read together (a class may derive from another file's)."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    found: list[str] = []
    ray_names: set[str] = set()  # what the files import from ray
    for name, tree in trees.items():
        found += [f"{name}:{line}: imports {what}" for line, what in _ray_imports(tree, ray_names)]
    classes = {node.name: node for tree in trees.values() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)}
    rllib: set[str] = set()  # classes deriving from RLlib's, through ccgym's or not
    while True:
        grown = {c for c, node in classes.items()
                 if any(rooted_at(b, ray_names | rllib) for b in node.bases)}
        if grown == rllib:
            break
        rllib = grown
    own = set().union(*(class_defined_names(node) for c, node in classes.items()
                        if c not in rllib))
    for c in sorted(rllib):
        for member in sorted(class_defined_names(classes[c])):
            if private(member) and member not in RLMODULE_HOOKS:
                found.append(f"{c}: defines {member} (RLlib's namespace)")
    for name, tree in trees.items():
        found += [f"{name}:{line}: {what}" for line, what in _attribute_uses(tree, rllib, own)]
    return found


def _ray_imports(tree: ast.Module, ray_names: set[str]) -> list[tuple[int, str]]:
    """Adds the names the tree binds to ray's modules and members to ray_names; (line, name)
    of each underscored one it imports."""
    private_imports = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ray":
            for alias in node.names:
                ray_names.add(alias.asname or alias.name)
                if private(alias.name):
                    private_imports.append((node.lineno, alias.name))
        elif isinstance(node, ast.Import):
            ray_names.update((a.asname or a.name).split(".")[0] for a in node.names
                             if a.name.split(".")[0] == "ray")
    return private_imports


def _attribute_uses(tree: ast.Module, rllib: set[str], own: set[str]) -> list[tuple[int, str]]:
    """(line, what) of each underscored attribute use that is not a ccgym class's own."""
    uses: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_class: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            in_class = node.name
        if isinstance(node, ast.Attribute) and private(node.attr):
            on_own_self = (isinstance(node.value, ast.Name) and node.value.id == "self"
                           and in_class is not None and in_class not in rllib
                           and node.attr in own)
            if not on_own_self:
                uses.append((node.lineno, f"uses .{node.attr}"))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in NAME_FUNCTIONS and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and private(node.args[1].value)):
            uses.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"))
        for child in ast.iter_child_nodes(node):
            visit(child, in_class)

    visit(tree, None)
    return uses


def test_ppo_uses_no_private_rllib_member() -> None:
    assert {p.name for p in PPO_FILES} >= {"ppo.py", "ppo_runner.py", "ppo_multi.py",
                                           "ppo_multi_runner.py", "ppo_module.py"}
    assert private_rllib_uses({p.name: p.read_text() for p in PPO_FILES}) == []


def test_the_check_finds_each_kind_of_private_use() -> None:
    runner = '''
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils import _private_helper

class Base(SingleAgentEnvRunner):
    def _sample(self): return self._weights_seq_no

class Runner(Base):
    def sample_round(self):
        self._needs_initial_reset = True

def reseed(runner, s):
    if hasattr(runner, "_seed"):
        runner._seed = s
'''
    module = '''
import ray.rllib.core.rl_module.torch as rl

class Module(rl.TorchRLModule):
    def _forward(self, batch): return self._lstm(batch)
    def _lstm(self, batch): return batch

class Trainer:
    def __init__(self): self._algo = None
    def run(self, module): return self._algo, module._forward_exploration({})
'''
    found = private_rllib_uses({"runner.py": runner, "module.py": module})
    expected = ["imports _private_helper", "Base: defines _sample", "uses ._weights_seq_no",
                "Runner: defines _needs_initial_reset", "uses ._needs_initial_reset",
                "hasattr(..., '_seed')", "uses ._seed", "Module: defines _lstm", "uses ._lstm",
                "uses ._forward_exploration"]
    for what in expected:
        assert any(what in f for f in found), (what, found)
    # Nothing more: not the documented hook (_forward), nor a ccgym class's own member (_algo).
    assert len(found) == len(expected), found


def test_ray_is_bounded_to_the_minor_release_it_is_tested_on() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    ray_requirement = next(Requirement(d) for d in dependencies
                           if re.match(r"ray\b", d))
    specifier = ray_requirement.specifier
    assert specifier.contains(ray.__version__), (ray.__version__, str(specifier))
    major, minor = (int(p) for p in ray.__version__.split(".")[:2])
    # An upper bound below the next minor release: RLlib's API moves between minor releases.
    assert not specifier.contains(f"{major}.{minor + 1}.0"), str(specifier)
