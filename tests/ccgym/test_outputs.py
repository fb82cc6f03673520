"""Every verb's output written to every kind of path (tests/ccgym/outputs.py runs the cases):
a FIFO with a reader, a symlink, '-', /dev/fd/N of a pipe, a read-only folder and one of the
command's own inputs. The node at the path is never replaced, the content arrives whole, and
the status is 0 or 2. And the --plots folder: written whole, stale plots gone, nothing left
by Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import outputs
import pytest

from ccgym import files, folders

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, /dev/fd and mounts")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    return outputs.make_inputs(tmp_path_factory.mktemp("inputs"))


@pytest.mark.parametrize("kind", outputs.KINDS)
@pytest.mark.parametrize("verb", sorted(outputs.VERBS))
def test_output_kind(verb: str, kind: str, inputs, tmp_path: Path) -> None:
    spec = outputs.VERBS[verb]
    outcome = outputs.run_case(spec, kind, inputs, tmp_path / "case")
    status, arrives = outputs.expected(spec, kind)
    assert outcome.status == status, outcome.stderr
    assert outcome.node_kept
    assert outcome.arrived == arrives, outcome.stderr
    assert "internal error" not in outcome.stderr and "Traceback" not in outcome.stderr
    if status == 2:
        assert len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr


def test_regular_files_are_replaced_atomically_and_devices_written_in_place(tmp_path) -> None:
    target = tmp_path / "out.json"
    files.atomic_write_json(target, [1])
    files.atomic_write_json(target, [2])
    assert target.read_text() == "[\n  2\n]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    files.atomic_write_text("/dev/null", "gone")
    assert Path("/dev/null").is_char_device()
    assert files.check_output("/dev/null") is None
    assert files.check_output(tmp_path) == f"{tmp_path} is a folder; give a file name"
    assert "does not exist" in files.check_output(tmp_path / "no" / "x.json")
    assert files.check_output("-", stdout=False).startswith("this output is not text")


def test_a_full_device_is_one_error_not_a_replaced_node() -> None:
    done = outputs.ccgym(["links", "show", outputs.LINK, "--json", "/dev/full"])
    assert done.returncode == 2, done.stderr
    assert b"No space left on device" in done.stderr
    assert Path("/dev/full").is_char_device()


@pytest.mark.parametrize("argv, message", [
    (["export", "{policy}", "-o", "{d}/x.pt"], "this output is an ONNX model; name it .onnx"),
    (["ensemble", "{policy}", "{policy}", "-o", "{d}/e.onnx"], "name it .pt"),
    (["report", "{rows}", "-o", "{d}/r.json"], "name it .html or .htm"),
    (["calibrate", "{rows}", "-o", "{d}/l.json"], "name it .toml"),
    (["calibrate", "{rows}", "--plot", "{d}/l.jpg"], "name it .png or .svg or .pdf"),
    (["eval", "--link", outputs.LINK, "--plots", "-"], "standard output cannot take a folder"),
])
def test_a_name_that_says_another_format_is_refused(argv, message, inputs, tmp_path) -> None:
    values = {"policy": inputs["policy"], "rows": inputs["rows"], "d": tmp_path}
    done = outputs.ccgym([a.format(**values) for a in argv])
    assert done.returncode == 2
    assert message in done.stderr.decode()
    assert not any(tmp_path.iterdir())


def _eval_plots(folder: Path, *extra: str) -> list[str]:
    return ["eval", "--link", outputs.LINK, "--schemes", "fixed:20", "--duration-s", "1",
            "--no-progress", "--plots", str(folder), *extra]


def test_plots_replace_an_earlier_plots_folder_through_a_symlink(tmp_path) -> None:
    real = tmp_path / "real"
    link = tmp_path / "plots"
    assert outputs.ccgym(_eval_plots(real, "--duration-s", "2")).returncode == 0
    (real / "stale__throughput.png").write_bytes(b"old plot")
    listing = real / folders.WRITTEN_LIST  # as if an earlier --plots had written it
    listing.write_text(listing.read_text().replace(
        '"entries": [', '"entries": [\n  "stale__throughput.png",'))
    link.symlink_to(real)
    done = outputs.ccgym(_eval_plots(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and (real / "index.html").is_file()
    assert not (real / "stale__throughput.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plots", "real"]


@pytest.mark.parametrize("kind", ["foreign file", "fifo", "devfd", "working folder"])
def test_plots_never_replace_what_is_not_theirs(kind: str, tmp_path) -> None:
    target = tmp_path / "plots"
    if kind == "foreign file":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "devfd":
        target = Path("/dev/fd/0")
    done = outputs.ccgym(_eval_plots(target if kind != "working folder" else Path(".")),
                         cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    if kind == "foreign file":
        assert (target / "notes.txt").read_text() == "mine"
    if kind == "fifo":
        assert target.is_fifo()


def test_plots_in_a_read_only_folder_are_refused_before_the_work(tmp_path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    done = outputs.run_read_only(locked, _eval_plots(locked / "plots"))
    assert done.returncode == 2, done.stderr
    assert b"is not writable" in done.stderr
    assert not any(locked.iterdir())


def test_train_out_in_a_read_only_folder_is_refused_before_the_work(tmp_path) -> None:
    # The run folders' parent judged by the one rule for output folders (folders.place_problem).
    locked = tmp_path / "locked"
    locked.mkdir()
    done = outputs.run_read_only(locked, ["train", "quick", "--out", str(locked / "runs")])
    assert done.returncode == 2, done.stderr
    assert b"argument --out: " in done.stderr and b"is not writable" in done.stderr
    assert not any(locked.iterdir())


def test_ctrl_c_while_plots_are_written_leaves_no_folder(tmp_path) -> None:
    """SIGINT once the plots' temporary folder exists: exit 130, neither it nor DIR left."""
    set_file = tmp_path / "many.toml"
    set_file.write_text('group = "g"\ndescription = "many"\n' + "".join(
        f'[[link]]\nname = "l{r}"\nrate_mbps = {r}\ndelay_ms = 20\n' for r in range(2, 40)))
    folder = tmp_path / "plots"
    argv = [sys.executable, "-m", "ccgym.cli", "eval", "--links", str(set_file), "--schemes",
            "fixed:20", "--duration-s", "2", "--no-progress", "--plots", str(folder)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + outputs.TIMEOUT_S
    while not any(p.name.startswith(".plots.") for p in tmp_path.iterdir()):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert process.wait(outputs.TIMEOUT_S) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.toml"]
