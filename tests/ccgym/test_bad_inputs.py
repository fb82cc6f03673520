"""Bad input a user can give any verb: each one ends in one line that says what and where,
exit status 2, and nothing written. The table is what a new user tried (issue 20); each row
once failed with a traceback, a hang or a silent nonsense result."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccgym.cli import main


def make_bad_files(folder: Path) -> Path:
    """A folder of bad files, and one of everything else the cases point at."""
    (folder / "empty.pt").write_bytes(b"")
    (folder / "garbage.pt").write_bytes(bytes(range(256)) * 4)
    (folder / "text.pt").write_text("hello\n")
    (folder / "garbage.onnx").write_bytes(bytes(range(256)) * 4)
    (folder / "binary.toml").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01")
    (folder / "empty.toml").write_text("")
    (folder / "binary.trace").write_bytes(b"0\n1\n\x01\x00\xff\n")
    (folder / "short.trace").write_text("0\n1\n2\n3\n")
    (folder / "a-file").write_text("in the way\n")
    (folder / "a-folder").mkdir()
    mine = folder / "my-photos"  # a folder of the user's own files, names ccgym writes among them
    mine.mkdir()
    for name in ("holiday.png", "index.html", "sender.tsv", "shell.tsv",
                 "cellular-6mbps-seed0.down"):
        (mine / name).write_text(f"the user's {name}\n")
    (folder / "my-photos-link").symlink_to(mine)
    return folder


@pytest.fixture
def files(tmp_path: Path) -> Path:
    return make_bad_files(tmp_path)


LINK = "rate_mbps=12,delay_ms=20"
EVAL = ["eval", "--link", LINK, "--schemes", "vegas", "--duration-s", "1", "--no-progress"]
LONG = "x" * 300  # over any file system's 255 bytes for a name

# (argv with {d} for the files folder, text the error must contain)
CASES = {
    # Policy files: empty, corrupt, not a policy at all, ONNX garbage.
    "eval empty policy": (["eval", "--link", LINK, "--schemes", "lstm:{d}/empty.pt"],
                          "empty file"),
    "eval corrupt policy": (["eval", "--link", LINK, "--schemes", "lstm:{d}/garbage.pt"],
                            "not a readable ccgym policy"),
    "eval text policy": (["eval", "--link", LINK, "--schemes", "lstm:{d}/text.pt"],
                         "not a readable ccgym policy"),
    "eval corrupt onnx": (["eval", "--link", LINK, "--schemes", "lstm:{d}/garbage.onnx"],
                          "not a readable ONNX model"),
    "export empty policy": (["export", "{d}/empty.pt"], "empty file"),
    "export corrupt policy": (["export", "{d}/garbage.pt"], "not a readable ccgym policy"),
    "ensemble empty policy": (["ensemble", "{d}/empty.pt", "{d}/garbage.pt", "-o",
                               "{d}/e.pt"], "empty file"),
    "ensemble one policy twice": (["ensemble", "{d}/garbage.pt", "{d}/./garbage.pt", "-o",
                                   "{d}/e.pt"], "are one policy"),
    # TOML files that are not text, or empty.
    "eval binary link set": (["eval", "--links", "{d}/binary.toml"], "binary.toml"),
    "train binary config": (["train", "{d}/binary.toml"], "binary.toml"),
    "train empty config": (["train", "{d}/empty.toml"], "empty"),
    # Seeds the core cannot take.
    "eval negative seed": ([*EVAL, "--seed", "-1"], "--seed"),
    "oracle negative seed": (["oracle", "--link", LINK, "--seed", "-1"], "--seed"),
    "links show negative seed": (["links", "show", LINK, "--seed", "-1"], "--seed"),
    "run negative seed": (["run", "--link", LINK, "--scheme", "cubic", "--seed", "-1"], "--seed"),
    # Output paths of the wrong kind.
    "eval json is a folder": ([*EVAL, "--json", "{d}/a-folder"], "is a folder"),
    "eval json in a missing folder": ([*EVAL, "--json", "{d}/nope/out.json"], "does not exist"),
    "eval plots is a file": ([*EVAL, "--plots", "{d}/a-file"], "is a file"),
    "eval plots under a file": ([*EVAL, "--plots", "{d}/a-file/plots"], "is a file"),
    "oracle json is a folder": (["oracle", "--link", LINK, "--json", "{d}/a-folder"],
                                "is a folder"),
    "run logs is a file": (["run", "--link", LINK, "--scheme", "cubic", "--logs", "{d}/a-file"],
                           "is a file"),
    "run plots is a file": (["run", "--link", LINK, "--scheme", "cubic", "--plots", "{d}/a-file"],
                            "is a file"),
    "train out is a file": (["train", "--out", "{d}/a-file"], "is a file"),
    "export output is a folder": (["export", "{d}/garbage.pt", "-o", "{d}/a-folder"],
                                  "is a folder"),
    "ensemble output is a folder": (["ensemble", "{d}/garbage.pt", "{d}/garbage.pt", "-o",
                                     "{d}/a-folder"], "is a folder"),
    "receive log in a missing folder": (["receive", "--port", "9", "--log", "{d}/nope/r.tsv"],
                                        "does not exist"),
    # Numbers out of bounds, checked where the spec is parsed.
    "eval huge rate": (["eval", "--link", "rate_mbps=1e9,delay_ms=20", "--schemes", "vegas"],
                       "[0.1, 10000] Mbit/s"),
    "eval tiny rate": (["eval", "--link", "rate_mbps=0.0001,delay_ms=20"], "[0.1, 10000]"),
    "eval huge delay": (["eval", "--link", "rate_mbps=12,delay_ms=1e9"], "[0, 1000] ms"),
    "eval huge queue": (["eval", "--link", "rate_mbps=12,queue=droptail:packets=1e12"],
                        "'queue'"),
    "eval huge duration": ([*EVAL[:-3], "--duration-s", "1e9"], "--duration-s"),
    "eval nan duration": ([*EVAL[:-3], "--duration-s", "nan"], "--duration-s"),
    "eval huge rate in a link set": (["oracle", "--link", "rate_mbps=20000"], "rate_mbps"),
    "links generate huge rate": (["links", "generate", "--out", "{d}/gen", "--mean-mbps", "1e9"],
                                 "--mean-mbps 1e+09: key 'rate_mbps' must be in [0.1, 10000]"),
    # A binary trace: the file, the line, and the bytes escaped.
    "eval binary trace": (["eval", "--link", "trace={d}/binary.trace,delay_ms=5"],
                          ("binary.trace:3: expected a non-negative integer (ms), got "
                           "'\\x01\\x00\\xff'")),
    # Silent nonsense before.
    "eval empty scheme item": (["eval", "--link", LINK, "--schemes", "vegas,,bbr"], "empty item"),
    "eval duplicate scheme": (["eval", "--link", LINK, "--schemes", "vegas,bbr,vegas"],
                              "given twice"),
    "eval flow after the end": ([*EVAL, "--flows", "2", "--interval-s", "5"],
                                "the last flow would start at 5 s"),
    "eval interval without a second flow": ([*EVAL, "--interval-s", "5"], "one flow"),
    "eval scheme external": (["eval", "--link", LINK, "--schemes", "external"],
                             "the learned flow's slot"),
    "run scheme external": (["run", "--link", LINK, "--scheme", "external"],
                            "the learned flow's slot"),
    "calibrate two outputs on standard output": (["calibrate", "{d}/none.json", "-o", "-",
                                                  "--json", "-"], "standard output"),
    "export of an onnx model": (["export", "{d}/garbage.onnx"], "already ONNX"),
    "eval zero flows": ([*EVAL, "--flows", "0"], "--flows"),
    "eval run shorter than the link's RTTs": (["eval", "--link", "trace={d}/short.trace,delay_ms=20"],
                                              "shorter than 2 minimum RTTs"),
    "run shorter than the link's RTTs": (["run", "--link", "rate_mbps=12,delay_ms=500", "--scheme",
                                          "cubic", "--duration-s", "1"], "shorter than 2"),
    # Real runs.
    "run corrupt onnx": (["run", "--link", LINK, "--scheme", "lstm:{d}/garbage.onnx"],
                         "not a readable ONNX model"),
    "run corrupt policy with new logs": (["run", "--link", LINK, "--scheme",
                                          "lstm:{d}/garbage.pt", "--logs", "{d}/new-logs"],
                                         "not a readable ccgym policy"),
    "run unresolvable remote": (["run", "--remote", "no-such-host.invalid:9000", "--scheme",
                                 "cubic"], "no-such-host.invalid"),
    # Counts: a typo would run for days.
    "eval a million runs": ([*EVAL, "--runs", "1000000"], "--runs: must be an integer in 1..100"),
    "calibrate a million trials": (["calibrate", "{d}/none.json", "--trials", "1000000"],
                                   "--trials: must be an integer in 1..2000"),
    "search a million trials": (["search", "--scheme", "cubic", "-o", "{d}/f.toml", "--trials",
                                 "1000000"], "--trials: must be an integer in 1..2000"),
    "links generate a million traces": (["links", "generate", "--out", "{d}/gen", "--count",
                                         "1000000"], "--count: must be an integer in 1..10000"),
    "receive bind elsewhere": (["receive", "--port", "9", "--bind", "192.0.2.1"], "192.0.2.1"),
    "receive bind a name": (["receive", "--port", "9", "--bind", "no-such-host.invalid"],
                            "no-such-host.invalid"),
    # Names and sizes: checked before any work, so a mistake never costs a finished run.
    "eval json of a 300-character name": ([*EVAL, "--json", f"{{d}}/{LONG}.json"], "too long"),
    "eval plots of a 300-character name": ([*EVAL, "--plots", f"{{d}}/{LONG}"], "too long"),
    "report output of a 300-character name": (["report", "{d}/a-file", "-o",
                                               f"{{d}}/{LONG}.html"], "too long"),
    "eval trace of a 300-character name": (["eval", "--link", f"trace={{d}}/{LONG},delay_ms=5"],
                                           "too long"),
    "eval lstm: of a 300-character name": (["eval", "--link", LINK, "--schemes",
                                            f"lstm:{{d}}/{LONG}.pt"], "too long"),
    "train config of a 300-character name": (["train", f"{{d}}/{LONG}.toml"], "too long"),
    "run lstm: of a 300-character name": (["run", "--link", LINK, "--scheme",
                                            f"lstm:{{d}}/{LONG}"], "too long"),
    "eval link name of 240 characters with plots": (
        ["eval", "--link", f"{LINK},name={'n' * 240}", "--schemes", "vegas", "--plots",
         "{d}/plots"], "at most 100"),
    "train hidden size of 100000": (["train", "--set", "model.hidden_size=100000", "--out",
                                     "{d}/runs"], "hidden_size: must be an integer in 1..1024"),
    "train run name of 300 characters": (["train", "--set", f"run.name={LONG}", "--out",
                                          "{d}/runs"], "at most 100"),
    "calibrate link name of 200 characters": (["calibrate", "{d}/none.json", "--name",
                                               "c" * 200], "at most 100"),
    "calibrate output of a 200-character name": (["calibrate", "{d}/none.json", "-o",
                                                  f"{{d}}/{'c' * 200}.toml"], "at most 100"),
    "train eval runs of 1000": (["train", "--set", "eval.runs=1000"], "1..100"),
    # Folders of the user's own files: refused, whatever the verb writes into them.
    "eval plots into the user's folder": ([*EVAL, "--plots", "{d}/my-photos"],
                                          "holds files ccgym did not write there"),
    "eval plots into the user's folder by a symlink": (
        [*EVAL, "--plots", "{d}/my-photos-link"], "holds files ccgym did not write there"),
    "run logs into the user's folder": (["run", "--link", LINK, "--scheme", "cubic", "--logs",
                                         "{d}/my-photos"], "--force"),
    "links generate into the user's folder": (["links", "generate", "--out", "{d}/my-photos"],
                                              "--force"),
    "shell log into the user's folder": (["shell", "--link", LINK, "--log", "{d}/my-photos"],
                                         "--force"),
    "shell log is a file": (["shell", "--link", LINK, "--log", "{d}/a-file"],
                            "is a file, not a folder"),
}


# The classes benchmarks/bench_reliability.py counts by: the first whose words a case's name has.
CLASSES = (("names and sizes", ("300-character", "240 characters", "100000", "300 characters",
                                 "200 characters", "200-character", "runs of 1000")),
           ("the user's folders", ("user's folder",)),
           ("policy files", ("policy", "onnx")), ("TOML files", ("config", "link set")),
           ("seeds", ("seed",)), ("counts", ("million",)),
           ("output paths", ("json", "plots", "logs", "out ", "output", "log in", "log is")),
           ("link specs, traces, durations", ("rate", "delay", "queue", "duration", "trace",
                                              "RTT")),
           ("schemes and flows", ("scheme", "flow")), ("addresses", ("remote", "bind")))


def input_class(name: str) -> str:
    return next(cls for cls, words in CLASSES if any(word in name for word in words))


def test_every_case_has_a_class() -> None:
    assert {input_class(name) for name in CASES} == {cls for cls, _ in CLASSES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_clear_line(name: str, files: Path, capsys) -> None:
    argv, expected = CASES[name]
    argv = [arg.replace("{d}", str(files)) for arg in argv]
    before = sorted(p.relative_to(files) for p in files.rglob("*"))
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ccgym {argv[0]}")
    assert "error: " in lines[0]
    assert expected in lines[0]
    assert "Traceback" not in err
    # Nothing written: no partial output, no run folder, no empty --logs folder.
    assert sorted(p.relative_to(files) for p in files.rglob("*")) == before


def test_an_unexpected_failure_is_one_line_pointing_to_its_traceback(monkeypatch, capsys,
                                                                       tmp_path: Path) -> None:
    from ccgym.analysis import cli_eval

    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path))

    def broken(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli_eval, "run", broken)
    assert main(EVAL) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ccgym eval: internal error")
    assert "ZeroDivisionError: a bug" in line
    [log] = (tmp_path / "crashes").iterdir()
    assert str(log) in line
    assert "Traceback" in log.read_text() and "ZeroDivisionError" in log.read_text()
    # --debug shows the traceback itself.
    with pytest.raises(ZeroDivisionError):
        main([*EVAL, "--debug"])


def test_a_bad_flag_is_one_line_not_the_usage(capsys) -> None:
    assert main(["eval", "--link", LINK, "--runs", "zero"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == ("ccgym eval: error: argument --runs: must be an integer, got 'zero' "
                    "(see ccgym eval --help)")
