"""Rollout workers: tasks run as Ray tasks (workers > 0) or in-process (workers = 0).

Any trainer's rollouts go through a RolloutPool: a task is a picklable value holding everything
its function needs, so it runs the same in-process, in a local Ray worker or on a cluster node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Task = TypeVar("Task")
Result = TypeVar("Result")


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
            import logging

            import ray

            if not ray.is_initialized():
                if self.ray_address:
                    ray.init(address=self.ray_address, logging_level=logging.WARNING)
                else:
                    # address="local": a Ray of this run's own, never a cluster that
                    # `ray start` left on this machine (ray.init() would join that one).
                    ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                             logging_level=logging.WARNING)
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
