"""The C++ UDP endpoints and the real-time relay, as real processes on loopback.

The executables are found as `ccgym run` finds them ($CCGYM_BIN_DIR, beside Python, PATH, a CMake
build under build/*/deploy/cpp); the tests skip when they are not built. Every
test ends every process it starts and checks that the ports it used are free.
"""

from __future__ import annotations

import contextlib
import random
import re
import selectors
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ccgym.measure.logs import read_tsv_log
from ccgym.deploy.harness import find_program
from ccgym.emulators import _core
from ccgym.errors import UserError

PROGRAMS = ("ccgym-sender", "ccgym-receiver", "ccgym-link")

# deploy/cpp/wire.hh, written out independently: a mismatch fails these tests.
MAGIC, VERSION, KIND_DATA, KIND_ACK = 0xCC, 1, 1, 2
DATA_HEADER = struct.Struct("<BBBBIQd")   # preamble, flow, seq, send_ms
ACK = struct.Struct("<BBBBIQddI")         # preamble, flow, seq, send_ms, recv_ms, payload bytes
IP_UDP_HEADER_BYTES = 28
assert DATA_HEADER.size == 24 and ACK.size == 36


def _find(name: str) -> str | None:
    """Where `ccgym run` finds the program (deploy/harness.py), or None: not built."""
    try:
        return find_program(name)
    except UserError:
        return None


BIN = {name: _find(name) for name in (*PROGRAMS, "ccgym-policy")}
pytestmark = pytest.mark.skipif(
    any(path is None for path in BIN.values()),
    reason="the C++ endpoints are not built (cmake --build build/<dir>; or set CCGYM_BIN_DIR)",
)


# ---------------------------------------------------------------- helpers


@contextlib.contextmanager
def started(*args: str) -> Iterator[subprocess.Popen]:
    """Runs a program; whatever happens, it is stopped (SIGTERM, then SIGKILL) and reaped."""
    proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
        assert proc.returncode is not None


def listening_port(proc: subprocess.Popen, timeout: float = 5.0) -> int:
    """Reads the 'listening on 127.0.0.1:PORT' line a server prints once bound."""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"{proc.args[0]} printed nothing within {timeout} s")
    line = proc.stdout.readline()
    m = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", line)
    stderr = proc.stderr.read() if proc.poll() is not None else ""
    assert m, f"unexpected first line {line!r} (stderr: {stderr})"
    return int(m.group(1))


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 5.0) -> str:
    """Signals a program, waits for it and returns its stderr; it must exit with 0."""
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args[0]} exited with {proc.returncode}: {err}"
    return err


def finish(proc: subprocess.Popen, timeout: float) -> str:
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args[0]} exited with {proc.returncode}: {err}"
    return err


def assert_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", port))  # raises if anything still holds it


def read_log(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """An endpoint's TSV log as analysis/ reads it: columns, and the trailer's key=value pairs."""
    log = read_tsv_log(path)
    return log.columns, log.trailer


def data_datagram(flow: int, seq: int, send_ms: float, size: int = 1472) -> bytes:
    head = DATA_HEADER.pack(MAGIC, VERSION, KIND_DATA, 0, flow, seq, send_ms)
    return head + bytes(size - len(head))


# ---------------------------------------------------------------- tests


def test_sender_and_receiver_exchange_data_and_acks(tmp_path: Path) -> None:
    rlog, slog = tmp_path / "receiver.tsv", tmp_path / "sender.tsv"
    with started(BIN["ccgym-receiver"], "--port", "0", "--log", str(rlog)) as receiver:
        port = listening_port(receiver)
        with started(BIN["ccgym-sender"], "--dest", f"127.0.0.1:{port}", "--scheme", "fixed:10",
                     "--duration-s", "2", "--flow", "7", "--log", str(slog)) as sender:
            finish(sender, timeout=10)
        receiver_err = stop(receiver)
    assert_port_free(port)
    assert "0 malformed datagrams" in receiver_err

    s, s_trailer = read_log(slog)
    r, r_trailer = read_log(rlog)
    sends = {k: v[s["event"] == "send"] for k, v in s.items()}
    acks = {k: v[s["event"] == "ack"] for k, v in s.items()}
    assert len(sends["seq"]) > 100
    assert np.all(sends["flow"] == 7) and np.all(r["flow"] == 7)
    assert np.all(sends["bytes"] == 1500) and np.all(r["bytes"] == 1500)
    np.testing.assert_array_equal(sends["seq"], np.arange(len(sends["seq"])))
    # Loopback loses nothing: every datagram arrived, all but the last window's were acked.
    np.testing.assert_array_equal(np.sort(r["seq"]), sends["seq"])
    assert len(sends["seq"]) - 10 <= len(acks["seq"]) <= len(sends["seq"])
    # An ACK echoes its datagram's send time and reports the receiver's arrival time.
    sent_at = dict(zip(sends["seq"], sends["send_ms"]))
    np.testing.assert_array_equal(acks["send_ms"], [sent_at[q] for q in acks["seq"]])
    arrived_at = dict(zip(r["seq"], r["recv_ms"]))
    np.testing.assert_array_equal(acks["recv_ms"], [arrived_at[q] for q in acks["seq"]])
    assert np.all(acks["ack_ms"] >= acks["send_ms"])
    # The window of 10 is respected: sends minus acks so far never exceed it.
    in_flight = np.cumsum(np.where(s["event"] == "send", 1, np.where(s["event"] == "ack", -1, 0)))
    assert in_flight.max() == 10
    # The clock origins in the trailers put both logs on one time axis (one host).
    offset_ms = (int(r_trailer["clock_origin_ns"]) - int(s_trailer["clock_origin_ns"])) / 1e6
    one_way = r["recv_ms"] + offset_ms - np.array([sent_at[q] for q in r["seq"]])
    assert np.all(one_way > -0.01) and np.median(one_way) < 5
    assert int(r_trailer["datagrams"]) == len(r["seq"]) and r_trailer["malformed"] == "0"
    assert int(s_trailer["sent"]) == len(sends["seq"]) and s_trailer["timeouts"] == "0"


def test_receiver_counts_and_survives_malformed_datagrams(tmp_path: Path) -> None:
    rlog = tmp_path / "receiver.tsv"
    rng = random.Random(1)
    good = data_datagram(3, 41, 12.5)
    crafted = [
        b"",                                                  # empty
        good[:23],                                            # header cut short
        bytes([MAGIC, VERSION + 1]) + good[2:],               # future version
        bytes([MAGIC, VERSION, KIND_ACK, 0]) + good[4:],      # an ACK's kind on data
        good[:3] + b"\x01" + good[4:],                        # reserved byte set
        DATA_HEADER.pack(MAGIC, VERSION, KIND_DATA, 0, 3, 1, float("nan")),  # NaN timestamp
    ]
    sent = 0
    with started(BIN["ccgym-receiver"], "--port", "0", "--log", str(rlog)) as receiver:
        port = listening_port(receiver)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            for datagram in crafted:
                s.sendto(datagram, ("127.0.0.1", port))
                sent += 1
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                for _ in range(5):
                    n = rng.randrange(0, 1501)
                    junk = bytearray(rng.randbytes(n))
                    if n:  # the first byte is never the magic: junk stays junk
                        junk[0] = rng.choice([b for b in range(256) if b != MAGIC])
                    s.sendto(bytes(junk), ("127.0.0.1", port))
                    sent += 1
                time.sleep(0.002)  # the receiver's socket buffer is never the limit
            assert receiver.poll() is None, "the receiver died of malformed input"
            # Still serving: a valid datagram is acknowledged.
            s.sendto(good, ("127.0.0.1", port))
            ack = ACK.unpack(s.recv(100))
        err = stop(receiver, signal.SIGINT)
    assert_port_free(port)
    assert ack[:4] == (MAGIC, VERSION, KIND_ACK, 0)
    assert ack[4:6] == (3, 41) and ack[6] == 12.5 and ack[8] == len(good)
    assert sent > 1000
    assert f"{sent} malformed datagrams" in err
    columns, trailer = read_log(rlog)
    assert trailer["malformed"] == str(sent)
    assert list(columns["seq"]) == [41]


@pytest.mark.parametrize("program", ["ccgym-receiver", "ccgym-link"])
def test_port_in_use_is_a_clear_error(program: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        args = {
            "ccgym-receiver": ["--port", str(port)],
            "ccgym-link": ["--listen", str(port), "--to", "127.0.0.1:9", "--link",
                           "rate_mbps=12,delay_ms=20"],
        }[program]
        result = subprocess.run([BIN[program], *args], capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
    assert "listening" not in result.stdout


def test_link_rejects_a_bad_spec() -> None:
    result = subprocess.run(
        [BIN["ccgym-link"], "--listen", "0", "--to", "127.0.0.1:9", "--link",
         "rate_mbps=12,delay_ms=20,colour=blue"],
        capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert "colour" in result.stderr
    assert "listening" not in result.stdout


@pytest.mark.parametrize("program", PROGRAMS)
def test_sigint_and_sigterm_stop_cleanly(program: str, tmp_path: Path) -> None:
    with started(BIN["ccgym-receiver"], "--port", "0") as receiver:
        port = listening_port(receiver)
        for sig in (signal.SIGINT, signal.SIGTERM):
            log = tmp_path / f"{program}-{sig}.tsv"
            args = {
                "ccgym-receiver": ["--port", "0", "--log", str(log)],
                "ccgym-sender": ["--dest", f"127.0.0.1:{port}", "--scheme", "fixed:5",
                                 "--log", str(log)],
                "ccgym-link": ["--listen", "0", "--to", f"127.0.0.1:{port}", "--link",
                               "rate_mbps=12,delay_ms=20"],
            }[program]
            with started(BIN[program], *args) as proc:
                own_port = listening_port(proc) if program != "ccgym-sender" else None
                time.sleep(0.5)
                start = time.monotonic()
                stop(proc, sig)
                assert time.monotonic() - start < 2
            if own_port is not None:
                assert_port_free(own_port)
            if program != "ccgym-link":
                _, trailer = read_log(log)  # the trailer is written on a signal too
                assert "clock_origin_ns" in trailer
        stop(receiver)
    assert_port_free(port)


def test_duration_ends_the_receiver_and_the_link() -> None:
    with started(BIN["ccgym-receiver"], "--port", "0", "--duration-s", "0.5") as receiver:
        port = listening_port(receiver)
        with started(BIN["ccgym-link"], "--listen", "0", "--to", f"127.0.0.1:{port}", "--link",
                     "rate_mbps=12,delay_ms=20", "--duration-s", "0.5") as link:
            link_port = listening_port(link)
            finish(link, timeout=5)
        finish(receiver, timeout=5)
    assert_port_free(port)
    assert_port_free(link_port)


def test_relay_gives_the_links_rate_and_delay(tmp_path: Path) -> None:
    rlog = tmp_path / "receiver.tsv"
    probe_log, bulk_log = tmp_path / "probe.tsv", tmp_path / "bulk.tsv"
    with started(BIN["ccgym-receiver"], "--port", "0", "--log", str(rlog)) as receiver:
        port = listening_port(receiver)
        with started(BIN["ccgym-link"], "--listen", "0", "--to", f"127.0.0.1:{port}", "--link",
                     "rate_mbps=12,delay_ms=20") as link:
            link_port = listening_port(link)
            dest = f"127.0.0.1:{link_port}"
            # One datagram at a time: every one finds the queue empty (the minimum RTT).
            with started(BIN["ccgym-sender"], "--dest", dest, "--scheme", "fixed:1", "--flow", "1",
                         "--duration-s", "1", "--log", str(probe_log)) as probe:
                finish(probe, timeout=10)
            time.sleep(0.1)
            with started(BIN["ccgym-sender"], "--dest", dest, "--scheme", "fixed:100", "--flow",
                         "2", "--duration-s", "3", "--log", str(bulk_log)) as bulk:
                finish(bulk, timeout=10)
            time.sleep(0.3)  # the last datagrams and ACKs drain through the link
            link_err = stop(link)
        stop(receiver)
    assert_port_free(port)
    assert_port_free(link_port)

    def rtts(log: Path) -> np.ndarray:
        s, _ = read_log(log)
        acks = s["event"] == "ack"
        return s["ack_ms"][acks] - s["send_ms"][acks]

    # 2 x 20 ms of propagation plus up to 1 ms for the next delivery opportunity and
    # the 1 ms serialization of 1500 bytes at 12 Mbit/s share one opportunity.
    probe_rtt = rtts(probe_log)
    assert len(probe_rtt) >= 15
    assert 40 <= probe_rtt.min() <= 42, f"min RTT {probe_rtt.min():.2f} ms"
    # The median allows a few ms of wakeup latency: on a loaded machine (a training at nice -10
    # on both cores) it was 42.7 ms; a queue of even 5 datagrams would add 5 ms to every RTT.
    assert np.median(probe_rtt) <= 45

    r, _ = read_log(rlog)
    bulk = r["flow"] == 2
    # Throughput at the receiver while the link was busy: the first arrival opens the interval.
    t = r["recv_ms"][bulk]
    mbps = r["bytes"][bulk][1:].sum() * 8 / (t[-1] - t[0]) / 1e3
    assert abs(mbps - 12) <= 0.15 * 12, f"throughput {mbps:.2f} Mbit/s through a 12 Mbit/s link"
    # A window of 100 over a 40-packet BDP keeps ~60 packets queued: ~100 ms RTT.
    assert 90 <= np.median(rtts(bulk_log)) <= 110
    m = re.search(r"data: (\d+) offered, (\d+) delivered, (\d+) dropped by the link, "
                  r"(\d+) malformed", link_err)
    assert m, link_err
    offered, delivered, dropped, malformed = map(int, m.groups())
    assert offered == delivered == len(r["seq"]) and dropped == malformed == 0


def test_a_paced_sender_starved_of_the_cpu_keeps_its_rate(tmp_path: Path) -> None:
    """bbr's sender, stopped 15 ms in every 17 for 2 s (a process starved of the CPU on a
    loaded host), sends at about its rate: each time it runs it catches up its pacing
    schedule. Sending only a few packets per run, it sent 2-3 Mbit/s and bbr's bandwidth
    estimate fell to that; a busier machine only starves it further."""
    log = tmp_path / "sender.tsv"
    with started(BIN["ccgym-receiver"], "--port", "0") as receiver:
        port = listening_port(receiver)
        with started(BIN["ccgym-link"], "--listen", "0", "--to", f"127.0.0.1:{port}", "--link",
                     "rate_mbps=24,delay_ms=20,queue=droptail:packets=40") as link:
            link_port = listening_port(link)
            with started(BIN["ccgym-sender"], "--dest", f"127.0.0.1:{link_port}", "--scheme",
                         "bbr", "--duration-s", "5", "--log", str(log)) as sender:
                time.sleep(2)  # past bbr's startup
                end = time.monotonic() + 2
                try:
                    while time.monotonic() < end:
                        sender.send_signal(signal.SIGSTOP)
                        time.sleep(0.015)
                        sender.send_signal(signal.SIGCONT)
                        time.sleep(0.002)
                finally:
                    sender.send_signal(signal.SIGCONT)
                finish(sender, timeout=15)
            stop(link)
        stop(receiver)
    assert_port_free(port)
    assert_port_free(link_port)
    s, _ = read_log(log)
    # The sender's clock starts after the process does: inside the starved 2 s, with margin.
    sends = (s["event"] == "send") & (s["send_ms"] >= 2200) & (s["send_ms"] < 3800)
    mbps = s["bytes"][sends].sum() * 8 / 1600 / 1e3
    assert mbps >= 10, f"the starved bbr sent {mbps:.1f} Mbit/s into a 24 Mbit/s link"


def test_link_counts_and_drops_malformed_datagrams() -> None:
    with started(BIN["ccgym-receiver"], "--port", "0") as receiver:
        port = listening_port(receiver)
        with started(BIN["ccgym-link"], "--listen", "0", "--to", f"127.0.0.1:{port}", "--link",
                     "rate_mbps=12,delay_ms=5") as link:
            link_port = listening_port(link)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(2)
                for junk in (b"", b"hello", bytes(2000), data_datagram(1, 1, 1.0)[:20]):
                    s.sendto(junk, ("127.0.0.1", link_port))
                s.sendto(data_datagram(4, 9, 2.0), ("127.0.0.1", link_port))
                ack = ACK.unpack(s.recv(100))  # the good one went through both ways
            link_err = stop(link)
        receiver_err = stop(receiver)
    assert ack[4:7] == (4, 9, 2.0)
    assert "data: 5 offered, 1 delivered, 0 dropped by the link, 4 malformed" in link_err
    assert "1 datagrams, 0 malformed datagrams" in receiver_err  # junk never reached it


def test_sender_recovers_after_acks_are_lost_for_5_s(tmp_path: Path) -> None:
    """A receiver stand-in that acknowledges nothing for 5 s, then everything."""
    slog = tmp_path / "sender.tsv"
    blackout_s = 5.0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fake:
        fake.bind(("127.0.0.1", 0))
        fake.settimeout(0.05)
        port = fake.getsockname()[1]
        with started(BIN["ccgym-sender"], "--dest", f"127.0.0.1:{port}", "--scheme", "fixed:10",
                     "--duration-s", "8", "--log", str(slog)) as sender:
            first = None
            while sender.poll() is None:
                try:
                    datagram, peer = fake.recvfrom(2000)
                except TimeoutError:
                    continue
                now = time.monotonic()
                first = first or now
                if now - first < blackout_s:
                    continue
                _, _, _, _, flow, seq, send_ms = DATA_HEADER.unpack_from(datagram)
                fake.sendto(ACK.pack(MAGIC, VERSION, KIND_ACK, 0, flow, seq, send_ms,
                                     (now - first) * 1e3, len(datagram)), peer)
            finish(sender, timeout=5)

    s, trailer = read_log(slog)
    ev, t = s["event"], s["send_ms"]
    blackout_ms = blackout_s * 1e3
    # During the blackout: the window of 10 went at once, then one datagram per timeout.
    in_blackout = (ev == "send") & (t < blackout_ms - 50)
    assert 10 < in_blackout.sum() <= 10 + blackout_s + 1
    assert (ev == "timeout").sum() >= 3
    # After it: ACKs flow and the sender is window-limited again, not timeout-limited.
    acks_after = (ev == "ack") & (s["ack_ms"] > blackout_ms)
    assert acks_after.sum() > 1000
    late_sends = (ev == "send") & (t > blackout_ms + 1000)
    assert late_sends.sum() > 1000
    assert int(trailer["acks"]) == (ev == "ack").sum()


# ---------------------------------------------------------------- the learned policy

HIDDEN = 6
OBS_DIM, NUM_ACTIONS = _core.OBS_DIM, _core.NUM_ACTIONS  # the sender's, from the one C++ source


def _lstm_onnx(path: Path, rng: np.random.Generator, out_w: np.ndarray, out_b: np.ndarray,
               metadata: dict[str, str] | None = None):
    """One LSTM step with elementary ops, as deploy's export writes it; returns the weights."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = {g: (rng.normal(0, 0.5, (OBS_DIM, HIDDEN)).astype(np.float32),
             rng.normal(0, 0.5, (HIDDEN, HIDDEN)).astype(np.float32),
             rng.normal(0, 0.1, (1, HIDDEN)).astype(np.float32)) for g in "ifgo"}
    inits, nodes = [], []
    for g, (wx, wh, b) in w.items():
        inits += [numpy_helper.from_array(wx, f"wx_{g}"), numpy_helper.from_array(wh, f"wh_{g}"),
                  numpy_helper.from_array(b, f"b_{g}")]
        nodes += [helper.make_node("MatMul", ["obs", f"wx_{g}"], [f"x_{g}"]),
                  helper.make_node("MatMul", ["h", f"wh_{g}"], [f"r_{g}"]),
                  helper.make_node("Add", [f"x_{g}", f"r_{g}"], [f"s_{g}"]),
                  helper.make_node("Add", [f"s_{g}", f"b_{g}"], [f"z_{g}"]),
                  helper.make_node("Tanh" if g == "g" else "Sigmoid", [f"z_{g}"], [f"a_{g}"])]
    inits += [numpy_helper.from_array(out_w, "w_out"), numpy_helper.from_array(out_b, "b_out")]
    nodes += [helper.make_node("Mul", ["a_f", "c"], ["fc"]),
              helper.make_node("Mul", ["a_i", "a_g"], ["ig"]),
              helper.make_node("Add", ["fc", "ig"], ["c_out"]),
              helper.make_node("Tanh", ["c_out"], ["tc"]),
              helper.make_node("Mul", ["a_o", "tc"], ["h_out"]),
              helper.make_node("MatMul", ["h_out", "w_out"], ["lw"]),
              helper.make_node("Add", ["lw", "b_out"], ["logits"])]
    io = lambda name, n: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, n])  # noqa: E731
    graph = helper.make_graph(nodes, "policy_step",
                              [io("obs", OBS_DIM), io("h", HIDDEN), io("c", HIDDEN)],
                              [io("logits", NUM_ACTIONS), io("h_out", HIDDEN), io("c_out", HIDDEN)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    helper.set_model_props(model, metadata or {})
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return w


def _reference_steps(w, out_w, out_b, observations: np.ndarray) -> list[tuple]:
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    h = np.zeros((1, HIDDEN), np.float64)
    c = np.zeros((1, HIDDEN), np.float64)
    steps = []
    for obs in observations:
        z = {g: obs[None, :] @ wx + h @ wh + b for g, (wx, wh, b) in w.items()}
        c = sig(z["f"]) * c + sig(z["i"]) * np.tanh(z["g"])
        h = sig(z["o"]) * np.tanh(c)
        steps.append(((h @ out_w + out_b)[0], h[0].copy(), c[0].copy()))
    return steps


def test_cpp_policy_runtime_matches_the_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    out_w = rng.normal(0, 1, (HIDDEN, NUM_ACTIONS)).astype(np.float32)
    out_b = rng.normal(0, 0.1, (1, NUM_ACTIONS)).astype(np.float32)
    model = tmp_path / "policy.onnx"
    w = _lstm_onnx(model, rng, out_w, out_b)
    observations = rng.uniform(0, 1.5, (40, OBS_DIM)).astype(np.float32)
    stdin = "\n".join(" ".join(f"{v:.9g}" for v in obs) for obs in observations) + "\n"
    result = subprocess.run([BIN["ccgym-policy"], "--model", str(model)], input=stdin,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(observations)
    for line, (logits, h, c) in zip(lines, _reference_steps(w, out_w, out_b, observations)):
        values = np.array(line.split()[1:], dtype=float)
        assert int(line.split()[0]) == int(np.argmax(logits))
        np.testing.assert_allclose(values[:NUM_ACTIONS], logits, atol=1e-5)
        np.testing.assert_allclose(values[NUM_ACTIONS:NUM_ACTIONS + HIDDEN], h, atol=1e-5)
        np.testing.assert_allclose(values[NUM_ACTIONS + HIDDEN:], c, atol=1e-5)


def test_policy_runtime_rejects_a_model_of_the_wrong_shape(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    model = tmp_path / "policy.onnx"
    _lstm_onnx(model, rng, np.zeros((HIDDEN, NUM_ACTIONS), np.float32),
               np.zeros((1, NUM_ACTIONS), np.float32))
    (tmp_path / "junk.onnx").write_bytes(b"\xff" * 100)
    result = subprocess.run([BIN["ccgym-policy"], "--model", str(tmp_path / "junk.onnx")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "junk.onnx" in result.stderr
    result = subprocess.run([BIN["ccgym-sender"], "--dest", "127.0.0.1:9", "--scheme",
                             f"lstm:{tmp_path / 'missing.onnx'}"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "missing.onnx" in result.stderr


@pytest.mark.parametrize("change, message", [
    ("Sub", "node 'logits_node' (Sub): this runtime runs the operators ccgym export writes"),
    ("broadcast", f"node 'logits_node' (Add): operands of shapes [1, {NUM_ACTIONS}] and [1, 1] "
                  "(this runtime does not broadcast)"),
])
def test_policy_runtime_refuses_what_it_does_not_run(tmp_path: Path, change: str,
                                                      message: str) -> None:
    """An operator other than the export's, or a broadcast, is refused at load, naming the
    node: never run wrongly."""
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    model_path = tmp_path / "policy.onnx"
    _lstm_onnx(model_path, np.random.default_rng(4), np.zeros((HIDDEN, NUM_ACTIONS), np.float32),
               np.zeros((1, NUM_ACTIONS), np.float32))
    model = onnx.load(str(model_path))
    last = model.graph.node[-1]  # lw + b_out -> logits
    last.name = "logits_node"
    if change == "Sub":
        last.op_type = "Sub"
    else:
        inits = model.graph.initializer
        index = next(i for i, t in enumerate(inits) if t.name == "b_out")
        inits[index].CopyFrom(numpy_helper.from_array(np.zeros((1, 1), np.float32), "b_out"))
    model_path.write_bytes(model.SerializeToString())
    result = subprocess.run([BIN["ccgym-policy"], "--model", str(model_path)], input="",
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr and str(model_path) in result.stderr


def test_policy_runtime_refuses_another_observation_version(tmp_path: Path) -> None:
    zeros = (np.zeros((HIDDEN, NUM_ACTIONS), np.float32), np.zeros((1, NUM_ACTIONS), np.float32))
    current = _core.OBSERVATION_VERSION
    for version, accepted in ((current, True), (current - 1, False)):
        model = tmp_path / f"v{version}.onnx"
        _lstm_onnx(model, np.random.default_rng(4), *zeros,
                   metadata={"observation_version": str(version)})
        result = subprocess.run([BIN["ccgym-policy"], "--model", str(model)], input="",
                                capture_output=True, text=True, timeout=30)
        assert (result.returncode == 0) == accepted, result.stderr
        if not accepted:
            assert result.returncode == 2
            assert f"trained on observation version {version}" in result.stderr


def _run_constant_policy(tmp_path: Path, action: str,
                         link: str | None = None) -> dict[str, np.ndarray]:
    """The sender log's columns of a 1 s loopback run of a policy that always says action,
    straight to the receiver or through the relay emulating `link`, with `t`, each row's time
    (an ACK's arrival, a datagram's send)."""
    model = tmp_path / f"always{action.replace('/', 'half')}.onnx"
    out_b = np.zeros((1, NUM_ACTIONS), np.float32)
    out_b[0, _core.ACTION_NAMES.index(action)] = 10.0
    _lstm_onnx(model, np.random.default_rng(5), np.zeros((HIDDEN, NUM_ACTIONS), np.float32),
               out_b)
    slog = tmp_path / "sender.tsv"
    with contextlib.ExitStack() as stack:
        receiver = stack.enter_context(started(BIN["ccgym-receiver"], "--port", "0"))
        dest = f"127.0.0.1:{listening_port(receiver)}"
        if link is not None:
            relay = stack.enter_context(started(BIN["ccgym-link"], "--listen", "0", "--to", dest,
                                                "--link", link))
            dest = f"127.0.0.1:{listening_port(relay)}"
        with started(BIN["ccgym-sender"], "--dest", dest, "--scheme", f"lstm:{model}",
                     "--duration-s", "1", "--log", str(slog)) as sender:
            finish(sender, timeout=10)
    s, _ = read_log(slog)
    return {**s, "t": np.where(s["event"] == "ack", s["ack_ms"], s["send_ms"])}


def test_sender_applies_the_policy_every_step(tmp_path: Path) -> None:
    """A policy that always says -1 shrinks the window by one packet per 10 ms step."""
    s = _run_constant_policy(tmp_path, "-1")
    window, t = s["window"], s["t"]
    assert window[0] == _core.INITIAL_WINDOW - 1  # the step at 0, before the first send
    assert np.all(np.diff(window) <= 0) and np.all(window % 1 == 0) and window.min() == 1
    # At most one step per 10 ms (at 0, 10, 20, ... ms)...
    assert np.all(window >= _core.INITIAL_WINDOW - 1 - np.floor(t / 10) - 1e-9)
    # ...and a step every 10 ms, give or take wakeups that come late on a busy machine: the
    # nine steps down to 1 take 90 ms.
    assert np.all(window[t > 250] == 1)


def test_sender_grows_the_window_only_on_acks(tmp_path: Path) -> None:
    """+10 every step grows the window only after the first ACK and once per ACK at most (the
    growth ceiling, actions.hh): an ACK row lies between any two growths. Through a 12 Mbit/s,
    20 ms relay the flight is some 40 datagrams, so the ceiling (twice it) lets the window grow
    past the initial 10 on an idle machine too; how far depends on the flight measured, which
    a busy machine's late ACKs inflate, so no bound on the size is asserted here
    (tests/cpp/test_actions.cc has it)."""
    s = _run_constant_policy(tmp_path, "+10", link="rate_mbps=12,delay_ms=20")
    window, is_ack = s["window"], s["event"] == "ack"
    assert len(window) > 100 and window[0] == _core.INITIAL_WINDOW
    grown = np.flatnonzero(np.diff(window) > 0) + 1  # rows showing a larger window
    assert len(grown) > 1, "the window never grew"
    acks = np.cumsum(is_ack)  # ACK rows up to and including each row
    assert acks[grown[0] - 1] > 0, "grew before the first ACK"
    # Between growths shown at rows g and i, an ACK at a row in [g, i - 1].
    since = acks[grown[1:] - 1] - acks[grown[:-1] - 1]
    assert np.all(since > 0), "grew twice without an ACK between"


@pytest.mark.parametrize("head, version, members", [
    ("classes", _core.OBSERVATION_VERSION, 1), ("log_change", _core.OBSERVATION_VERSION, 1),
    ("classes", _core.COMPETITION_OBSERVATION_VERSION, 1),
    ("log_change", _core.OBSERVATION_VERSION, 3)])
def test_cpp_runtime_matches_onnxruntime_on_an_exported_policy(tmp_path: Path, head: str,
                                                               version: int, members: int) -> None:
    """The sender's runtime (deploy/cpp/onnx_policy.hh) against the reference (onnxruntime),
    step by step, on what `ccgym export` writes, with either head, each observation version's
    length, and an ensemble (block-diagonal recurrent weights, which the runtime stores by
    their blocks)."""
    export = pytest.importorskip("ccgym.deploy.export")
    lstm = pytest.importorskip("ccgym.policies.lstm")
    ort = pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    policies = [lstm.LstmPolicy(hidden_size=16, head=head, observation_version=version)
                for _ in range(members)]
    policy = policies[0] if members == 1 else lstm.ensemble(policies)
    assert policy.obs_dim == _core.OBS_DIMS[version]
    path = export.export_policy(policy, tmp_path / "policy.onnx")
    rng = np.random.default_rng(6)
    observations = rng.uniform(0, 2, (200, policy.obs_dim)).astype(np.float32)
    # Windows from one packet to the largest (feature 1.0), and beyond it (clamped).
    observations[:, _core.OBS_WINDOW_INDEX] = rng.uniform(0, 1.1, 200)
    stdin = "\n".join(" ".join(f"{v:.9g}" for v in obs) for obs in observations) + "\n"
    result = subprocess.run([BIN["ccgym-policy"], "--model", str(path)], input=stdin,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    h = np.zeros((1, policy.hidden_size), np.float32)
    c = np.zeros_like(h)
    hidden = policy.hidden_size
    for step, (line, obs) in enumerate(zip(result.stdout.splitlines(), observations, strict=True)):
        logits, h, c = session.run(["logits", "h_out", "c_out"], {"obs": obs[None], "h": h, "c": c})
        fields = line.split()
        values = np.array(fields[1:], dtype=float)
        np.testing.assert_allclose(values[:policy.num_actions], logits[0], atol=1e-5,
                                   err_msg=f"logits at step {step}")
        np.testing.assert_allclose(values[policy.num_actions:policy.num_actions + hidden], h[0],
                                   atol=1e-5, err_msg=f"h at step {step}")
        np.testing.assert_allclose(values[policy.num_actions + hidden:], c[0], atol=1e-5,
                                   err_msg=f"c at step {step}")
        top2 = np.sort(logits[0])[-2:]
        if top2[1] - top2[0] > 1e-5:  # a near tie may go either way within float error
            assert int(fields[0]) == int(np.argmax(logits[0])), f"action at step {step}"
