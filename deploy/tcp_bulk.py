"""A bulk TCP transfer with a chosen kernel congestion control: the kernel schemes' traffic.

  python -m ccgym.deploy.tcp_bulk receive --bind ADDR          # prints "listening on ADDR:PORT"
  python -m ccgym.deploy.tcp_bulk send --to ADDR:PORT --cc cubic --duration-s 10

The sender keeps the socket's send buffer full for --duration-s, so the kernel's
congestion control alone decides the rate; the receiver reads and discards. Both
stop on SIGTERM. Everything is measured by the link shell's log, not here.

Why not iperf3: the transfer is all this needs, and iperf3 adds a control connection
through the link (a second flow in the log), its own start-up and reporting, and a
system package; with a socket of our own, TCP_CONGESTION is set and read back on the
very socket that carries the data, and the run stops exactly at its duration.
Standard library only: it starts in tens of milliseconds inside the shell.
"""

from __future__ import annotations

import argparse
import selectors
import signal
import socket
import struct
import sys
import time
from typing import cast

CHUNK_BYTES = 1 << 18
# struct tcp_info (linux/tcp.h): tcpi_min_rtt, in microseconds, sits at this byte offset.
TCP_INFO_MIN_RTT_OFFSET = 148


def available_congestion_controls() -> list[str]:
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return f.read().split()
    except OSError:
        return []


def _stop_on_sigterm() -> None:
    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def send(to: str, cc: str, duration_s: float) -> int:
    host, _, port = to.rpartition(":")
    # The kernel's own buffer sizing (tcp_wmem, tcp_rmem autotuning), as an application that
    # sets none gets it: on a link with an unlimited queue it caps the window only once about
    # 4 MB (tcp_wmem's maximum) are in flight, after 18 s for one cubic flow alone on the
    # Verizon LTE recording; before that the congestion window decides (docs/results.md).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    except OSError as e:
        print(f"tcp_bulk: congestion control {cc!r}: {e.strerror} (available: "
              f"{' '.join(available_congestion_controls())})", file=sys.stderr)
        return 2
    in_use = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    if in_use != cc:
        print(f"tcp_bulk: asked for {cc}, the socket uses {in_use}", file=sys.stderr)
        return 2
    sock.connect((host, int(port)))
    payload = bytes(CHUNK_BYTES)
    sock.settimeout(0.2)  # wake up to check the clock even when the window is shut
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        try:
            sock.send(payload)
        except TimeoutError:
            continue
    # The local port names this flow in the link shell's log: flows to one receiver that start
    # together appear in either order.
    print(f"local_port={sock.getsockname()[1]}", flush=True)
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) >= TCP_INFO_MIN_RTT_OFFSET + 4:
        (min_rtt_us,) = struct.unpack_from("I", info, TCP_INFO_MIN_RTT_OFFSET)
        print(f"min_rtt_us={min_rtt_us}", flush=True)
    sock.close()
    return 0


def receive(bind: str, port: int) -> int:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((bind, port))
    server.listen(16)
    host, bound_port = server.getsockname()
    print(f"listening on {host}:{bound_port}", flush=True)
    buffer = bytearray(CHUNK_BYTES)
    with selectors.DefaultSelector() as sel:
        sel.register(server, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                conn = cast(socket.socket, key.fileobj)  # only sockets are registered
                if conn is server:
                    client, _ = server.accept()
                    client.setblocking(False)
                    sel.register(client, selectors.EVENT_READ)
                    continue
                try:
                    n = conn.recv_into(buffer)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    n = 0
                if n == 0:
                    sel.unregister(conn)
                    conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccgym.deploy.tcp_bulk", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("send", help="send for --duration-s with --cc")
    s.add_argument("--to", required=True, metavar="ADDR:PORT")
    s.add_argument("--cc", required=True, help="a kernel congestion control, e.g. cubic")
    s.add_argument("--duration-s", type=float, required=True)
    r = sub.add_parser("receive", help="accept connections and discard what they send")
    r.add_argument("--bind", default="127.0.0.1")
    r.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    _stop_on_sigterm()
    if args.mode == "send":
        return send(args.to, args.cc, args.duration_s)
    return receive(args.bind, args.port)


if __name__ == "__main__":
    sys.exit(main())
