"""The UDP endpoints' TSV logs, read and joined into the packet log analysis/ scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccgym.measure.logs import packet_log_from_acks, packet_log_from_endpoints, read_tsv_log
from ccgym.errors import UserError

SENDER_HEADER = "event\tflow\tseq\tbytes\tsend_ms\trecv_ms\tack_ms\twindow"
RECEIVER_HEADER = "flow\tseq\tbytes\tsend_ms\trecv_ms"


def write(path: Path, header: str, rows: list[str], trailer: str) -> Path:
    path.write_text("\n".join([header, *rows, f"# {trailer}"]) + "\n")
    return path


def sender_log(tmp_path: Path, sends: list[tuple[int, float]], acks=(), origin_ns=0) -> Path:
    rows = [f"send\t0\t{seq}\t1500\t{t}\tnan\tnan\t10" for seq, t in sends]
    rows += [f"ack\t0\t{seq}\t1500\t{s}\t{r}\t{a}\t10" for seq, s, r, a in acks]
    return write(tmp_path / "sender.tsv", SENDER_HEADER, rows,
                 f"clock_origin_ns={origin_ns} sent={len(sends)}")


def test_read_tsv_log_columns_and_trailer(tmp_path: Path) -> None:
    log = read_tsv_log(sender_log(tmp_path, [(0, 0.5), (1, 1.5)], origin_ns=2_000_000))
    assert list(log.columns["event"]) == ["send", "send"]
    np.testing.assert_array_equal(log.columns["send_ms"], [0.5, 1.5])
    assert log.trailer["sent"] == "2" and log.clock_origin_ms() == 2.0


def test_a_short_row_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.tsv", RECEIVER_HEADER, ["0\t1\t1500\t0.0\t5.0", "0\t2\t1500"],
                 "clock_origin_ns=0")
    with pytest.raises(UserError, match=r"r\.tsv:3: 3 fields, the header has 5"):
        read_tsv_log(path)


def test_a_log_cut_short_has_no_clock_origin(tmp_path: Path) -> None:
    path = tmp_path / "r.tsv"
    path.write_text(RECEIVER_HEADER + "\n0\t1\t1500\t0.0\t5.0\n")
    with pytest.raises(UserError, match="clock_origin_ns"):
        read_tsv_log(path).clock_origin_ms()


def test_endpoints_join_on_one_clock_lost_and_in_flight(tmp_path: Path) -> None:
    # The receiver's clock started 3 ms after the sender's. Packet 1 was lost (packet 2,
    # sent later, arrived); packet 3 was still on its way when the logs closed.
    sender = read_tsv_log(sender_log(tmp_path, [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0)]))
    receiver = read_tsv_log(write(tmp_path / "receiver.tsv", RECEIVER_HEADER,
                                  ["0\t0\t1500\t0.0\t17.0", "0\t2\t1500\t2.0\t19.5"],
                                  "clock_origin_ns=3000000"))
    log = packet_log_from_endpoints(sender, receiver)
    np.testing.assert_array_equal(log.seq, [0, 1, 2, 3])
    np.testing.assert_allclose(log.arrival_ms, [20.0, np.nan, 22.5, np.nan])
    np.testing.assert_array_equal(log.dropped, [0, 1, 0, 0])


def test_remote_delays_are_rtt_based(tmp_path: Path) -> None:
    # Receiver clock 1000 ms ahead; RTTs 40 and 50 ms; the second packet queued 10 ms more
    # on the way out. One-way delays: half the minimum RTT, then 10 ms more.
    acks = [(0, 0.0, 1020.0, 40.0), (1, 10.0, 1040.0, 60.0)]
    log, min_rtt = packet_log_from_acks(read_tsv_log(sender_log(tmp_path, [(0, 0.0), (1, 10.0)],
                                                                acks)))
    assert min_rtt == 40.0
    np.testing.assert_allclose(log.arrival_ms - log.send_ms, [20.0, 30.0])


def test_remote_run_with_no_acks_has_no_rtt(tmp_path: Path) -> None:
    log, min_rtt = packet_log_from_acks(read_tsv_log(sender_log(tmp_path, [(0, 0.0)])))
    assert np.isnan(min_rtt) and len(log) == 1 and not np.isfinite(log.arrival_ms[0])
