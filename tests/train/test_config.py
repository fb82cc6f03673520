"""Training configs: the packaged ones load; mistakes fail naming file, section and key."""

from __future__ import annotations

import dataclasses
import pickle
from importlib import resources
from pathlib import Path

import pytest

from ccgym.emulators import _core
from ccgym.errors import UserError
from ccgym.train.validation import check_config
from ccgym.envs.config import EnvConfig
from ccgym.train.config import (COMPETITION_FIELDS, SECTIONS, TrainConfig, describe_config,
                                env_config, load_config, load_packaged_config, parse_assignment,
                                parse_config, resolve_link_entries, resolve_train_links,
                                resolve_validation_links, to_toml, with_overrides)
from ccgym.train.sections import LinksSection


# Every training config shipped in configs/train, so that a new one is checked too.
PACKAGED_CONFIGS = sorted(entry.name.removesuffix(".toml")
                          for entry in (resources.files("ccgym.configs") / "train").iterdir()
                          if entry.name.endswith(".toml"))


def write(tmp_path: Path, text: str, name: str = "train.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", PACKAGED_CONFIGS)
def test_packaged_configs_load(name: str) -> None:
    config = load_packaged_config(name)
    assert config.run.name == name
    assert config.run.iterations >= 1


@pytest.mark.parametrize("name", PACKAGED_CONFIGS)
def test_packaged_configs_train_without_the_shared_data(name: str, tmp_path: Path,
                                                        monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "absent"))  # no shared data
    config = load_packaged_config(name)
    train_links, note = resolve_train_links(config)  # raises on a missing trace
    assert train_links
    # What `ccgym train NAME` checks before it starts, the fallbacks too; the run then trains
    # on the links resolved there, not resolved again.
    links = check_config(config)
    assert links.train == train_links
    assert links.validation == resolve_validation_links(config)[0]
    assert links.notes == [n for n in (note, resolve_validation_links(config)[1]) if n]


def test_cellular_config_varies_delays_buffers_and_ack_paths(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "absent"))
    config = load_packaged_config("cellular")
    links, note = resolve_train_links(config)
    assert note  # the recorded training traces are absent: generated cellular and Poisson links
    specs = [_core.parse_link_spec(link.spec) for link in links]
    assert len(links) == 16 * 4 * 3 * 2
    assert sum("poisson" in link.name for link in links) == 8 * 4 * 3 * 2
    assert {s.delay_ms for s in specs} == {5, 20, 50, 100}
    assert sum(s.queue == "infinite" for s in specs) == len(specs) // 3
    assert sum(bool(s.ack_trace) for s in specs) == 8 * 4 * 3  # the cellular links' own uplinks


def test_quick_config_validates_on_links_it_does_not_train_on() -> None:
    config = load_packaged_config("quick")
    train = resolve_link_entries(config.links.train, "train")
    validation, note = resolve_validation_links(config)
    assert len(train) == 16 and note is None
    assert not {link.spec for link in train} & {link.spec for link in validation}


def test_unknown_key_names_file_section_key_and_valid_keys(tmp_path: Path) -> None:
    path = write(tmp_path, "[dagger]\nbeta_decai = 0.5\n")
    with pytest.raises(UserError) as e:
        load_config(path)
    message = str(e.value)
    assert str(path) in message and "[dagger]" in message and "'beta_decai'" in message
    assert "did you mean 'beta_decay'" in message
    assert "bptt_len" in message and "epochs" in message  # the valid keys are listed


def test_unknown_section(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"unknown key 'trainer'.*valid keys: run, links"):
        load_config(write(tmp_path, "[trainer]\nlr = 1\n"))


@pytest.mark.parametrize("text, match", [
    ('[run]\nworkers = "two"\n', r"\[run\] workers: must be an integer, got 'two'"),
    ("[run]\niterations = 2.5\n", r"\[run\] iterations: must be an integer"),
    ("[run]\nseed = true\n", r"\[run\] seed: must be an integer"),
    ("[optimizer]\nlr = \"fast\"\n", r"\[optimizer\] lr: must be a number"),
    ("[links]\ntrain = 12\n", r"\[links\] train: must be a string or a list of strings"),
    ("[eval]\nbaselines = \"cubic\"\n", r"\[eval\] baselines: must be a list of strings"),
    ("run = 3\n", r"\[run\]: must be a table"),
])
def test_bad_types(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize("text, match", [
    ("[run]\nworkers = -1\n", r"\[run\] workers: must be 0 \(serial\) or more"),
    ("[dagger]\nbeta0 = 1.5\n", r"\[dagger\] beta0: must be in \[0, 1\]"),
    ("[run]\nepisode_ms = 1005\n", r"\[run\] episode_ms: must be a multiple"),
    ("[dagger]\nbptt_len = 0\n", r"\[dagger\] bptt_len: must be positive"),
    ("[model]\nhead = \"gaussian\"\n", r"\[model\] head: must be one of classes, log_change"),
    ("[dagger]\nrandom_start = 1.5\n", r"\[dagger\] random_start: must be in \[0, 1\]"),
    ("[dagger]\noracle_lookbacks = []\n", r"\[dagger\] oracle_lookbacks: must be a non-empty list"),
    ("[dagger]\noracle_lookbacks = [2]\n", r"\[dagger\] oracle_lookbacks: must be a non-empty list"),
    ("[optimizer]\nlr_decay = 0\n", r"\[optimizer\] lr_decay: must be in \(0, 1\]"),
    ("[optimizer]\nlr_decay = 1.2\n", r"\[optimizer\] lr_decay: must be in \(0, 1\]"),
    ("[eval]\nduration_s = -1\n", r"\[eval\] duration_s: must not be negative"),
    ("[run]\nname = \"a__b\"\n", r"\[run\] name"),
    ("[links]\ntrain = []\n", r"\[links\] train: must name a link set"),
    ("[links]\nvary_ack = [\"stalling\"]\n", r"\[links\] vary_ack: 'stalling' is not one of own"),
    ("[links]\nvary_delay_ms = [-5]\n", r"\[links\] vary_delay_ms: -5.0 is not a delay"),
    ("[links]\nvary_queue_bdp = [\"big\"]\n", r"\[links\] vary_queue_bdp: must be a list of numbers"),
    ("[eval]\nshare_floor = 0.3\n", r"\[eval\] share_floor: needs competitors"),
    ("[model]\nobservation_version = 3\n", r"\[model\] observation_version: must be one of 4, 6"),
    ("[algorithm]\nname = \"ppo\"\n[model]\nobservation_version = 6\n",
     r"\[model\] observation_version: PPO observes version 4 only"),
    ("[eval]\nshare_floor = 1.5\n", r"\[eval\] share_floor: must be in \[0, 1\]"),
    ("[eval]\nshare_ceiling = 0.6\n", r"\[eval\] share_ceiling: needs competitors"),
    ("[eval]\nshare_against = [\"bbr\"]\nshare_floor = 0.5\nshare_ceiling = 0.4\n",
     r"\[eval\] share_ceiling: must be at least share_floor \(0.5\), got 0.4"),
    ("[eval]\nshare_against = [\"bbr\"]\nshare_duration_s = 10\n",
     r"\[eval\] share_duration_s: must be more than share_stagger_s \+ 5 s \(the ramp\), 10, got 10"),
    ("[eval]\nshare_against = [\"bbr\"]\nshare_links = []\n",
     r"\[eval\] share_links: must name a link set"),
    ("[eval]\nshare_against = [\" \"]\n", r"\[eval\] share_against: has an empty scheme"),
])
def test_bad_values(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_config(write(tmp_path, text))


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[run\nname = 1\n")
    with pytest.raises(UserError, match=f"{path}: TOML syntax error"):
        load_config(path)


def test_defaults_and_written_config_round_trip(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[run]\nname = "x"\n[dagger]\nbeta_decay = 0.25\n'))
    assert config.dagger.beta_decay == 0.25
    assert config.dagger.bptt_len == TrainConfig().dagger.bptt_len  # untouched: the default
    again = load_config(write(tmp_path, to_toml(config, header="resolved"), "resolved.toml"))
    assert again == config


def test_a_config_extends_a_packaged_one_key_by_key(tmp_path: Path) -> None:
    mixed = load_packaged_config("mixed")
    config = load_config(write(tmp_path, 'extends = "mixed"\n[run]\nname = "v"\n'
                                         '[dagger]\nepochs = 9\n'))
    assert (config.run.name, config.dagger.epochs) == ("v", 9)
    assert config.dagger.beta_decay == mixed.dagger.beta_decay != TrainConfig().dagger.beta_decay
    assert config.links == mixed.links and config.run.iterations == mixed.run.iterations


def test_an_extended_file_resolves_its_paths_from_its_own_folder(tmp_path: Path,
                                                                 monkeypatch) -> None:
    (tmp_path / "base").mkdir()
    write(tmp_path / "base", '[links]\ntrain = ["delivery=trace,trace=up.trace,delay_ms=10"]\n'
                             'validation = ["rate_mbps=6,delay_ms=10"]\n', "base.toml")
    child = write(tmp_path, 'extends = "base/base.toml"\n[run]\nseed = 4\n')
    monkeypatch.chdir(tmp_path / "base")  # elsewhere than the child
    config = load_config(child)
    assert config.run.seed == 4
    assert str(tmp_path / "base" / "up.trace") in config.links.train[0]


@pytest.mark.parametrize("text, match", [
    ('extends = "quik"\n', "extends = 'quik': no such config file or packaged training config.*quick"),
    ('extends = 3\n', "extends: must be a packaged config's name"),
    ('extends = "nowhere/base.toml"\n', "extends: no such file"),
    ('extends = "train.toml"\n', "cannot extend itself"),
    ('extends = "quick"\n[run]\nseeds = 2\n', r"train\.toml: \[run\]: unknown key 'seeds'"),
    ('extends = "quick"\n[dagger]\nepochs = "four"\n', "epochs: must be an integer"),
])
def test_a_bad_extends_names_the_file_and_what_is_wrong(tmp_path: Path, text: str,
                                                        match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_config(write(tmp_path, text))


def test_a_cycle_of_extends_is_refused(tmp_path: Path) -> None:
    write(tmp_path, 'extends = "b.toml"\n', "a.toml")
    write(tmp_path, 'extends = "a.toml"\n[run]\nseed = 2\n', "b.toml")
    with pytest.raises(UserError, match=r"a\.toml -> .*b\.toml -> .*a\.toml"):
        load_config(tmp_path / "a.toml")


def test_mixed_shared_is_mixed_with_a_competitor() -> None:
    mixed = load_packaged_config("mixed").to_dict()
    shared = load_packaged_config("mixed-shared").to_dict()
    differ = {f"{s}.{k}" for s in mixed for k in mixed[s] if mixed[s][k] != shared[s][k]}
    assert differ == {"run.name", "links.competitors", "links.competitor_starts",
                      "links.competitor_stagger_ms", "eval.share_against"}
    # It watches its shares but chooses its policy by score, as mixed does.
    assert shared["eval"]["share_floor"] == 0.0


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path, monkeypatch) -> None:
    sets = tmp_path / "conf"
    sets.mkdir()
    (sets / "mine.toml").write_text(
        'group = "mine"\n[[link]]\nname = "a"\nrate_mbps = 5\ndelay_ms = 10\n')
    path = write(sets, '[links]\ntrain = "mine.toml"\n'
                       'validation = ["rate_mbps=6,delay_ms=10"]\n')
    monkeypatch.chdir(tmp_path)  # elsewhere than the config
    config = load_config(path)
    assert Path(config.links.train).is_absolute()
    [link] = resolve_link_entries(config.links.train, "train")
    assert link.name == "a" and link.group == "mine"


def test_validation_falls_back_when_the_shared_data_is_absent(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "no-data-here"))
    config = parse_config({"links": {"validation": "cellular-real",
                                     "validation_fallback": ["rate_mbps=7,delay_ms=10"]}})
    links, note = resolve_validation_links(config)
    assert note and "fallback" in note
    assert [link.spec for link in links] == [
        resolve_link_entries(["rate_mbps=7,delay_ms=10"], "x")[0].spec]
    # Without a fallback the missing data is an error that says what to do.
    config.links.validation_fallback = ""
    with pytest.raises(UserError, match="not found"):
        resolve_validation_links(config)


def test_training_links_fall_back_and_are_varied(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "no-data-here"))
    config = parse_config({"links": {"train": "cellular-real",
                                     "train_fallback": ["rate_mbps=7,delay_ms=10"],
                                     "vary_delay_ms": [5, 40], "vary_queue_bdp": [0, 1]}})
    links, note = resolve_train_links(config)
    assert note and "train_fallback" in note
    assert sorted((_core.parse_link_spec(link.spec).delay_ms, _core.parse_link_spec(link.spec).queue)
                  for link in links) == [(5, "droptail:packets=6"), (5, "infinite"),
                                         (40, "droptail:packets=47"), (40, "infinite")]


def test_a_moved_key_says_where_it_is_now(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"\[dagger\] num_envs: every trainer's num_envs is now "
                                        r"\[run\] num_envs"):
        load_config(write(tmp_path, "[dagger]\nnum_envs = 4\n"))


@pytest.mark.parametrize("text, expected", [
    ("dagger.epochs=8", ("dagger.epochs", 8)),
    ("optimizer.lr = 0.5", ("optimizer.lr", 0.5)),
    ("eval.oracle=false", ("eval.oracle", False)),
    ('eval.baselines=["cubic", "bbr"]', ("eval.baselines", ["cubic", "bbr"])),
    ("links.vary_delay_ms=[5, 20]", ("links.vary_delay_ms", [5, 20])),
    ("run.name=quick-2", ("run.name", "quick-2")),  # a string needs no quotes
    ("run.name=123", ("run.name", "123")),  # a string field keeps the text as written
    ('run.name="x"', ("run.name", "x")),
    ("links.train=cellular-generated", ("links.train", "cellular-generated")),
])
def test_set_reads_a_value_as_its_key_is_typed(text: str, expected: tuple) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text, match", [
    ("dagger.epochz=3", r"--set dagger.epochz=3: unknown key 'epochz' \(did you mean 'epochs'"),
    ("dager.epochs=3", r"--set dager.epochs=3: unknown section 'dager'.*valid sections: run"),
    ("run.iterations", r"give SECTION.KEY=VALUE"),
    ("iterations=3", r"give SECTION.KEY=VALUE"),
    ("run.iterations=two", r"\[run\] iterations must be an integer, got 'two'"),
    ("ppo.episode_ms=500", r"every trainer's episode_ms is now run.episode_ms"),
])
def test_set_names_a_bad_key_or_value(text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        parse_assignment(text)


def test_an_override_is_checked_as_the_key_it_sets() -> None:
    config = load_packaged_config("quick")
    changed = with_overrides(config, **dict([parse_assignment("dagger.epochs=9")]))
    assert changed.dagger.epochs == 9 and config.dagger.epochs == 4
    with pytest.raises(UserError, match=r"command line: \[run\] iterations: must be an integer"):
        with_overrides(config, **dict([parse_assignment("run.iterations=2.5")]))


def test_a_run_uses_and_shows_only_its_own_trainers_section() -> None:
    dagger = load_packaged_config("quick")
    ppo = with_overrides(dagger, **{"algorithm.name": "ppo", "ppo.minibatch_size": 100})
    assert "dagger" in dagger.used_sections() and "ppo" not in dagger.used_sections()
    assert "ppo" in ppo.used_sections() and "dagger" not in ppo.used_sections()
    for config, other in ((dagger, "ppo."), (ppo, "dagger.")):
        keys = list(config.flat())
        assert "run.num_envs" in keys and "eval.duration_s" in keys
        assert not [key for key in keys if key.startswith(other)]


def test_every_registered_trainer_is_a_trainer_with_known_sections() -> None:
    from ccgym.train.registry import TRAINERS, trainer_class
    from ccgym.train.trainer import Trainer

    for name, registration in TRAINERS.items():
        cls = trainer_class(name)
        assert issubclass(cls, Trainer) and cls.name == name
        assert set(registration.sections) <= set(SECTIONS)


def test_the_config_reference_describes_every_key() -> None:
    text = describe_config()
    for name, section in SECTIONS.items():
        assert f"\n[{name}]" in "\n" + text
        for f in dataclasses.fields(section):
            assert f.metadata.get("doc"), f"{name}.{f.name} has no description"
            assert f"\n  {f.name} = " in text
    assert '[ppo] (used when [algorithm] name = "ppo")' in text
    assert "  episode_ms = 10000.0    (a number)" in text


def test_the_environment_is_derived_once_with_its_links_resolved() -> None:
    config = parse_config({"links": {"train": ["rate_mbps=12,delay_ms=20"],
                                     "vary_delay_ms": [5.0, 40.0],
                                     "competitors": ["none", "cubic"],
                                     "competitor_starts": ["before", "after"]}}, "test")
    links = resolve_train_links(config)[0]
    env = env_config(config, links)
    # The links travel resolved, each variant under its own name, and survive pickling as
    # they cross to a worker.
    assert env.profiles is not None
    assert [p.name for p in env.profiles] == [link.name for link in links]
    assert [p.delay_ms for p in env.profiles] == [5.0, 40.0]
    assert pickle.loads(pickle.dumps(env)) == env
    for name in COMPETITION_FIELDS:
        assert getattr(env, name) == getattr(config.links, name)
    assert env.competitor_starts == ["before", "after"]  # not the default: passed on


def test_the_links_competitor_keys_are_the_environments_fields() -> None:
    declared = {f.name: f for f in dataclasses.fields(EnvConfig)}
    for f in dataclasses.fields(LinksSection):
        if f.name in COMPETITION_FIELDS:
            assert f.metadata == declared[f.name].metadata  # one description, one rule
    assert set(COMPETITION_FIELDS) <= {f.name for f in dataclasses.fields(LinksSection)}
