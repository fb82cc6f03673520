"""The one rule for folders a command writes (ccgym.files: --plots, links generate --out,
run --logs, shell --log): a folder holding files ccgym did not write is refused in one line
before any work, unless --force, which keeps every one of them; what ccgym wrote before is
replaced whole. Real folders holding a user's own files, compared byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ccgym import folders
from ccgym.cli import main
from ccgym.errors import UserError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="symlinks, file-name limits")

LINK = "rate_mbps=12,delay_ms=20"
EVAL = ["eval", "--link", LINK, "--schemes", "fixed:20", "--duration-s", "1", "--no-progress"]


def users_folder(folder: Path) -> dict[str, bytes]:
    """A folder of the user's own files, with names ccgym itself writes among them."""
    folder.mkdir(parents=True, exist_ok=True)
    own = {"holiday.png": b"\x89PNG holiday", "index.html": b"<p>my page</p>",
           "notes/today.txt": b"mine",
           "cellular-6mbps-seed0.down": b"0\n1\n2\n", "sender.tsv": b"my sender log\n",
           "shell.tsv": b"my shell log\n"}
    for name, data in own.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return own


def unchanged(folder: Path, own: dict[str, bytes]) -> bool:
    return all((folder / name).read_bytes() == data for name, data in own.items())


def one_error_line(capsys, verb: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ccgym {verb}: error: "), err
    return lines[0]


# Each verb that writes a folder ({dir}), and the files of users_folder whose names it writes
# itself (what --force replaces).
FOLDER_VERBS = {
    "eval --plots": ([*EVAL, "--plots", "{dir}"], {"index.html"}),
    "links generate --out": (["links", "generate", "--out", "{dir}", "--mean-mbps", "6",
                              "--duration-s", "5"], {"cellular-6mbps-seed0.down"}),
    "run --logs": (["run", "--link", LINK, "--scheme", "cubic", "--duration-s", "1", "--logs",
                    "{dir}"], {"sender.tsv"}),
    "shell --log": (["shell", "--link", LINK, "--log", "{dir}", "--", "true"], {"shell.tsv"}),
}


def with_force(argv: list[str]) -> list[str]:
    at = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:at], "--force", *argv[at:]]


@pytest.mark.parametrize("verb", sorted(FOLDER_VERBS))
@pytest.mark.parametrize("through", ["folder", "symlink"])
def test_a_folder_of_the_users_files_is_refused_before_any_work(verb, through, tmp_path,
                                                                capsys) -> None:
    argv = FOLDER_VERBS[verb][0]
    own_folder = tmp_path / "photos"
    own = users_folder(own_folder)
    given = own_folder
    if through == "symlink":
        given = tmp_path / "link"
        given.symlink_to(own_folder)
    status = main([a.replace("{dir}", str(given)) for a in argv])
    line = one_error_line(capsys, argv[0])
    assert status == 2
    assert "holds files ccgym did not write there" in line and "--force" in line
    assert unchanged(own_folder, own)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["photos"] + (["link"] if through == "symlink" else []))


def test_plots_replace_what_ccgym_wrote_whole_and_refuse_once_the_user_adds_a_file(
        tmp_path, capsys) -> None:
    plots = tmp_path / "plots"
    assert main([*EVAL, "--plots", str(plots)]) == 0
    first = sorted(p.name for p in plots.iterdir())
    assert "index.html" in first and folders.WRITTEN_LIST in first
    (plots / "stale__throughput.png").write_bytes(b"from an earlier run")
    written = json.loads((plots / folders.WRITTEN_LIST).read_text())
    written["entries"].append("stale__throughput.png")  # as if an earlier run had written it
    (plots / folders.WRITTEN_LIST).write_text(json.dumps(written))
    assert main([*EVAL, "--plots", str(plots)]) == 0
    assert sorted(p.name for p in plots.iterdir()) == first  # replaced whole: no stale plot
    (plots / "my-notes.txt").write_text("mine")
    capsys.readouterr()
    assert main([*EVAL, "--plots", str(plots)]) == 2
    assert "my-notes.txt" in one_error_line(capsys, "eval")
    assert (plots / "my-notes.txt").read_text() == "mine"


def test_force_writes_into_the_users_folder_and_keeps_every_other_file(tmp_path) -> None:
    folder = tmp_path / "photos"
    own = users_folder(folder)
    assert main([*EVAL, "--plots", str(folder), "--force"]) == 0
    # index.html is a name ccgym writes: --force replaces it; everything else is kept.
    kept = {name: data for name, data in own.items() if name != "index.html"}
    assert unchanged(folder, kept)
    assert (folder / "index.html").read_bytes() != own["index.html"]
    assert any(p.name.endswith("__tradeoff.png") for p in folder.iterdir())
    # Again: ccgym's files are replaced, the user's still kept.
    assert main([*EVAL, "--plots", str(folder), "--force"]) == 0
    assert unchanged(folder, kept)


def test_links_generate_into_a_folder_it_wrote_replaces_its_traces(tmp_path, capsys) -> None:
    out = tmp_path / "gen"
    base = ["links", "generate", "--out", str(out), "--mean-mbps", "6", "--duration-s", "5"]
    assert main([*base, "--seed", "1"]) == 0
    assert main([*base, "--seed", "2"]) == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "cellular-6mbps-seed2.down", "cellular-6mbps-seed2.up"]


def test_a_user_file_written_while_the_command_ran_is_not_replaced(tmp_path) -> None:
    target = tmp_path / "plots"
    with pytest.raises(UserError, match="holds files ccgym did not write"):
        with folders.output_folder(target) as folder:
            (folder / "plot.png").write_bytes(b"plot")
            target.mkdir()
            (target / "mine.txt").write_text("mine")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plots"]
    assert (target / "mine.txt").read_text() == "mine"


def test_a_failed_command_leaves_no_folder_it_made(tmp_path) -> None:
    with pytest.raises(KeyboardInterrupt):
        with folders.output_folder(tmp_path / "new" / "deeper" / "plots") as folder:
            (folder / "plot.png").write_bytes(b"half")
            raise KeyboardInterrupt
    assert not any(tmp_path.iterdir())


def test_shell_log_that_is_a_file_is_refused_as_run_logs_is(tmp_path, capsys) -> None:
    path = tmp_path / "log"
    path.write_text("mine")
    assert main(["shell", "--link", LINK, "--log", str(path), "--", "true"]) == 2
    assert "is a file, not a folder" in one_error_line(capsys, "shell")
    assert path.read_text() == "mine"


@pytest.mark.parametrize("verb", sorted(FOLDER_VERBS))
def test_force_keeps_every_file_of_a_name_the_verb_does_not_write(verb, tmp_path) -> None:
    argv, replaced = FOLDER_VERBS[verb]
    folder = tmp_path / "photos"
    own = users_folder(folder)
    assert main(with_force([a.replace("{dir}", str(folder)) for a in argv])) == 0
    assert unchanged(folder, {n: d for n, d in own.items() if n not in replaced})
    assert all((folder / n).read_bytes() != own[n] for n in replaced)  # ccgym's, as asked
