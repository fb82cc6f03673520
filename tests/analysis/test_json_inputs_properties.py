"""Property tests (Hypothesis) of the readers of `ccgym eval/run --json` files: `ccgym report`
and `ccgym calibrate`'s measurements. Any JSON (or any bytes) is a result or one clear line with
exit status 2, never an internal error."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccgym.cli import main
from ccgym.measure.measurements import read_measurements
from ccgym.errors import UserError

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))
FIELDS = st.sampled_from(["link", "scheme", "group", "runs", "throughput_mbps", "capacity_mbps",
                          "utilization", "delay_p95_ms", "e2e_delay_p95_ms", "score",
                          "score_std", "loss", "mode", "clock", "duration_s", "seed", "flows",
                          "jain_index", "kind"])
ROWS = st.lists(st.dictionaries(st.one_of(FIELDS, st.text(max_size=4)), SCALARS, max_size=12),
                max_size=4)
DOCS = st.one_of(ROWS, st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8))


def written(content: bytes) -> tuple[tempfile.TemporaryDirectory, Path]:
    folder = tempfile.TemporaryDirectory()
    path = Path(folder.name) / "rows.json"
    path.write_bytes(content)
    return folder, path


@SETTINGS
@given(doc=DOCS)
def test_report_of_any_json_is_a_page_or_one_clear_line(doc, capsys) -> None:
    folder, path = written(json.dumps(doc).encode())
    with folder:
        capsys.readouterr()
        status = main(["report", str(path), "-o", str(Path(folder.name) / "out.html")])
        err = capsys.readouterr().err
        assert status in (0, 2), err
        if status == 2:
            assert len(err.strip().splitlines()) == 1, err


@SETTINGS
@given(doc=DOCS)
def test_calibrate_reads_any_json_as_measurements_or_a_clear_error(doc) -> None:
    folder, path = written(json.dumps(doc).encode())
    with folder:
        try:
            read_measurements([path])
        except UserError as e:
            assert str(path) in str(e)


@SETTINGS
@given(data=st.binary(max_size=200))
def test_any_bytes_are_a_clear_error(data: bytes, capsys) -> None:
    folder, path = written(data)
    with folder:
        try:
            read_measurements([path])
        except UserError as e:
            assert str(path) in str(e)
        capsys.readouterr()
        assert main(["report", str(path), "-o", str(Path(folder.name) / "out.html")]) in (0, 2)
