"""Rollout workers: tasks run as Ray tasks (workers > 0) or in-process (workers = 0).

Any trainer's rollouts go through a RolloutPool: a task is a picklable value holding everything
its function needs, so it runs the same in-process, in a local Ray worker or on a cluster node.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ccgym.errors import UserError
from ccgym.interrupts import handlers_kept

Task = TypeVar("Task")
Result = TypeVar("Result")


# How long the head of a cluster may take to accept a TCP connection: Ray itself retries for
# minutes against an address where nothing listens.
CONNECT_TIMEOUT_S = 5.0
# Ray's own single-machine mode (its default on macOS and Windows): the node's address is
# 127.0.0.1, so every Ray server listens on loopback only. Read by Ray at import and in workers.
_LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_AUTH_MODE_ENV = "RAY_AUTH_MODE"


def _start_local_ray(workers: int) -> None:
    """A private Ray instance on this machine, reachable from it only."""
    import ray
    from ray._private import ray_constants

    os.environ[_LOCAL_ONLY_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False  # ray is imported already: set what it read
    _token_auth_quietly()
    # address="local": a Ray of this run's own, never a cluster that `ray start` left on this
    # machine (ray.init() would join that one).
    ray.init(address="local", num_cpus=workers, include_dashboard=False,
             logging_level=logging.WARNING)


def _token_auth_quietly() -> None:
    """Token authentication on, as Ray's default for a new local instance is, but chosen here:
    Ray warns on every run when it chooses it itself ("Token authentication is enabled ...
    Set RAY_AUTH_MODE=disabled to opt out"), which tells a user of `ccgym train` nothing.
    A mode the user set stays as set."""
    if _AUTH_MODE_ENV in os.environ:
        return
    os.environ[_AUTH_MODE_ENV] = "token"
    from ray._raylet import Config  # type: ignore[attr-defined]  # ray's _raylet.pyi omits it

    Config.initialize("")  # ray is imported already: re-read the environment


def _join_cluster(address: str) -> None:
    """Joins the cluster at HOST:PORT (its head's GCS port) or "auto"; UserError within seconds
    when nothing answers there or it refuses this driver."""
    import ray

    check_address(address)
    _use_cluster_token()
    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"ray address {address}: cannot join the cluster ({first}); a cluster "
                        "with token authentication (Ray's default) needs its token here: copy "
                        "the head's ~/.ray/auth_token, or set RAY_AUTH_TOKEN to the output of "
                        "`ray get-auth-token` on the head") from None


def check_address(address: str) -> None:
    """A UserError within seconds unless something answers at HOST:PORT ("auto" is not
    checked): called before a run folder is made, so that a wrong address leaves none."""
    if address == "auto":
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"ray address {address!r}: expected HOST:PORT (the head's port, "
                        "6379 unless `ray start --head --port` said otherwise) or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise UserError(f"ray address {address}: nothing answers there within "
                        f"{CONNECT_TIMEOUT_S:g} s ({e.strerror or e}); is the head started "
                        f"(ray start --head --port {port}) and reachable?") from None


def _use_cluster_token() -> None:
    """Sends the cluster token when there is one (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or
    ~/.ray/auth_token, as `ray start` keeps it): a driver sends none unless RAY_AUTH_MODE says
    token, and then fails authentication against a default `ray start --head`."""
    if _AUTH_MODE_ENV in os.environ:
        return  # the user decided
    if not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
            or (Path.home() / ".ray" / "auth_token").is_file()):
        return
    os.environ[_AUTH_MODE_ENV] = "token"
    from ray._raylet import Config  # type: ignore[attr-defined]  # private, untyped

    Config.initialize("")  # ray is imported already: re-read the environment


class RolloutPool:
    """A context manager: Ray is shut down on exit, whatever the exit (end, error, Ctrl-C), if
    this pool started it. With ray_address it joins a running cluster instead of starting one.
    """

    def __init__(self, workers: int, ray_address: str = "") -> None:
        self.workers = workers
        self.ray_address = ray_address
        self._started_ray = False
        self._remote: dict[Callable[..., Any], Any] = {}  # function -> its Ray remote

    def __enter__(self) -> RolloutPool:
        if self.workers > 0:
            import ray

            if not ray.is_initialized():
                with handlers_kept():
                    if self.ray_address:
                        _join_cluster(self.ray_address)
                    else:
                        _start_local_ray(self.workers)
                self._started_ray = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._remote.clear()
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    def run(self, function: Callable[[Task], Result], tasks: Sequence[Task],
            on_done: Callable[[Result], None] | None = None) -> list[Result]:
        """function(task) for every task; the results in task order. on_done is called as each
        one finishes (a progress bar's update)."""
        if self.workers <= 0:
            results = []
            for task in tasks:
                results.append(function(task))
                if on_done:
                    on_done(results[-1])
            return results
        import ray

        if function not in self._remote:
            # One CPU per task: a rollout is one simulator thread plus one torch thread.
            self._remote[function] = ray.remote(num_cpus=1, max_retries=1)(function)
        refs = [self._remote[function].remote(task) for task in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        out: list[Any] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                out[index[ref]] = ray.get(ref)
                if on_done:
                    on_done(out[index[ref]])
        return out
