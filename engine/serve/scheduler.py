"""The decode worker of ``exitlaw serve --batching continuous``: every request's choices share running batches.

One worker thread owns the model. Each pass of its loop:

1. runs the calls queued for the worker (encoding and checking prompts, scoring log-probabilities,
   echo's prompt log-probabilities: work that uses the model, between rounds); a call may queue a
   request's choices itself (:meth:`Scheduler.submit_all`), and they join in this same pass;
2. drops the rows whose client has gone (:meth:`Scheduler.cancel`: a closed stream or connection),
   so a cancelled choice decodes at most the round already under way;
3. admits waiting choices, oldest first, while the running rows stay within ``max_rows``: one
   prefill per decode setting for all that join (:meth:`RunningBatch.admit`);
4. runs one round of every running batch (one batch per sampling setting: the batched verifiers take
   one temperature and one set of filters per call) and hands each choice its block; a choice ends at
   its ``max_tokens`` (so at most ``max_tokens`` rounds), a stop token or a stop string, and leaves
   its batch at once. When the last choice of a request ends, the request's answer is built on the
   worker in that pass (:meth:`Scheduler.submit_all`'s ``then``), not in a later one.

Each choice is a row with its own seed's streams (:mod:`exitlaw.engine.decode.continuous`): its tokens
do not depend on what else is running. :attr:`Scheduler.stats` counts rounds, the rows they decoded
(``row_rounds / rounds`` is the batch's mean occupancy; ``round_sizes`` how many rounds decoded each
number of rows), admissions and cancellations; ``GET /stats`` serves them.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Callable

import torch

from exitlaw.engine.decode.continuous import Row, RunningBatch
from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.engine.serve.errors import APIError


class Cancelled(Exception):
    """The choice's client went away before it finished."""


@dataclass(eq=False)
class Job:
    """One choice to decode: its prompt ids, its own config (seed, limit, stop tokens), its request's
    stop strings, and ``emit(block)`` (worker thread) for each block it commits. The future gets
    ``(tokens, block_lengths)`` or the error that ended it."""

    ids: list[int]
    cfg: DecodeConfig
    stop: tuple[str, ...] = ()
    emit: Callable[[list[int]], None] | None = None
    decide: Callable | None = None
    text: Callable[[list[int]], str] | None = None  # the request's decode, for its stop strings
    future: Future = field(default_factory=Future)
    cancelled: bool = False
    cancel_rounds: int | None = None  # the row's rounds when the cancel was asked
    row: Row | None = None
    group: _Group | None = None  # the request it belongs to (:meth:`Scheduler.submit_all`)


@dataclass(eq=False)
class _Group:
    """One request's jobs: ``then()`` runs on the worker when the last of them has ended, and ``future``
    gets its result (or the error of the first job that failed)."""

    pending: int
    then: Callable[[], object]
    future: Future = field(default_factory=Future)

    def job_ended(self, err: BaseException | None) -> None:
        if self.future.done():
            return
        try:
            if err is not None:
                self.future.set_exception(err)  # the caller cancels the others
                return
            self.pending -= 1
            if self.pending == 0:
                try:
                    result = self.then()
                except BaseException as then_err:
                    self.future.set_exception(then_err)
                else:
                    self.future.set_result(result)
        except InvalidStateError:  # cancelled by its caller meanwhile: nobody reads it
            pass


@dataclass
class Stats:
    """What the worker has done (read by ``GET /stats``; written by the worker thread only)."""

    rounds: int = 0  # rounds run, over every batch (one batch's round = one target forward)
    row_rounds: int = 0  # rows decoded, summed over rounds (/ rounds: mean rows per round)
    # rows in a round -> rounds of that size
    round_sizes: dict[int, int] = field(default_factory=dict)
    admitted: int = 0
    finished: int = 0
    cancelled: int = 0
    running: int = 0
    waiting: int = 0
    largest_batch: int = 0  # most rows in one pass (running plus joining)
    # per cancelled choice that had started: rounds it ran after its cancel was asked (at most 1)
    rounds_after_cancel: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "rounds": self.rounds,
            "row_rounds": self.row_rounds,
            "round_sizes": {str(k): v for k, v in sorted(self.round_sizes.items())},
            "admitted": self.admitted,
            "finished": self.finished,
            "cancelled": self.cancelled,
            "running": self.running,
            "waiting": self.waiting,
            "largest_batch": self.largest_batch,
            "rounds_after_cancel": list(self.rounds_after_cancel[-64:]),
        }


class Scheduler:
    """The worker thread and its queues (module docstring); ``engine`` a loaded :class:`ServeEngine`."""

    def __init__(self, engine, max_rows: int = 16):
        if max_rows < 1:
            raise ValueError(f"--max-batch must be >= 1, got {max_rows}")
        self.engine, self.max_rows = engine, int(max_rows)
        self.stats = Stats()
        self._cv = threading.Condition()
        self._waiting: deque[Job] = deque()
        self._calls: deque[tuple[Callable, tuple, Future]] = deque()
        self._batches: dict[object, RunningBatch] = {}
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name="exitlaw-decode", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ called from other threads
    def call(self, fn: Callable, *args) -> Future:
        """Run ``fn(*args)`` on the worker thread between rounds; its future gets the result."""
        fut: Future = Future()
        with self._cv:
            if self._closing:
                fut.set_exception(APIError(503, "the server is shutting down"))
                return fut
            self._calls.append((fn, args, fut))
            self._cv.notify()
        return fut

    def submit_all(self, jobs: list[Job], then: Callable[[], object]) -> Future:
        """Queue one request's ``jobs``; the returned future gets ``then()``, run on the worker as soon
        as the last of them has ended (in the pass it ends in), or the first job's error. Called on the
        worker itself (inside a :meth:`call`), the jobs join in that same pass. No jobs: ``then`` runs
        as a call."""
        if not jobs:
            return self.call(then)
        group = _Group(len(jobs), then)
        for job in jobs:
            job.group = group
        with self._cv:
            if self._closing:
                down = APIError(503, "the server is shutting down")
                for job in jobs:
                    job.future.set_exception(down)
                group.future.set_exception(down)
                return group.future
            self._waiting.extend(jobs)
            self._cv.notify()
        return group.future

    def cancel(self, jobs) -> None:
        """Ask these choices to stop (a finished one is left as it is); the worker drops them before
        its next round."""
        with self._cv:
            for job in jobs:
                if not job.future.done() and not job.cancelled:
                    job.cancelled = True
                    job.cancel_rounds = job.row.rounds if job.row is not None else None
            self._cv.notify()

    def close(self) -> None:
        """Stop the worker: every waiting and running choice ends with a 503."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._thread.join(60)

    # ------------------------------------------------------------------ the worker
    def _loop(self) -> None:
        while True:
            with self._cv:
                while not (self._closing or self._calls or self._waiting or self._running()):
                    self._cv.wait()
                if self._closing:
                    break
                calls = list(self._calls)
                self._calls.clear()
            for fn, args, fut in calls:
                if not fut.set_running_or_notify_cancel():
                    continue  # its caller has gone (a cancelled future): nothing to run or answer
                try:
                    result = fn(*args)
                except BaseException as err:  # the caller answers it (an APIError, or a 500)
                    fut.set_exception(err)
                else:
                    fut.set_result(result)
            with torch.inference_mode():
                self._drop_cancelled()
                self._admit()
                for key, batch in list(self._batches.items()):
                    if len(batch):
                        self._round(key, batch)
            self._count()
        self._shutdown()

    def _running(self) -> int:
        return sum(len(b) for b in self._batches.values())

    def _count(self) -> None:
        self.stats.running, self.stats.waiting = self._running(), len(self._waiting)

    def _drop_cancelled(self) -> None:
        with self._cv:
            gone = [j for j in self._waiting if j.cancelled]
            for job in gone:
                self._waiting.remove(job)
        for job in gone:
            self.stats.cancelled += 1
            self._end(job, Cancelled())
        for batch in self._batches.values():
            for row in batch.evict([r.key for r in batch.rows if r.key.cancelled]):
                job = row.key
                self.stats.cancelled += 1
                if job.cancel_rounds is not None:
                    self.stats.rounds_after_cancel.append(row.rounds - job.cancel_rounds)
                self._end(job, Cancelled())

    def _admit(self) -> None:
        room = self.max_rows - self._running()
        new: dict[object, list[Row]] = {}
        with self._cv:
            while room > 0 and self._waiting:
                job = self._waiting.popleft()
                job.row = Row(job, job.ids, job.cfg, job.decide)
                new.setdefault(job.cfg.settings, []).append(job.row)
                room -= 1
        # rows decoded in this pass: the running ones and those joining (some may end at their first token)
        joining = sum(len(rows) for rows in new.values())
        self.stats.largest_batch = max(self.stats.largest_batch, self._running() + joining)
        for key, rows in new.items():
            batch = self._batches.get(key)
            if batch is None:
                batch = self._batches[key] = RunningBatch(
                    self.engine.target, self.engine.drafter, rows[0].cfg
                )
            try:
                firsts = batch.admit(rows)
            except Exception as err:
                self._fail([r.key for r in rows], err)
                continue
            self.stats.admitted += len(rows)
            self._deliver(batch, firsts)

    def _round(self, key, batch: RunningBatch) -> None:
        rows = len(batch)
        try:
            out = batch.step()
        except Exception as err:  # a bad row (NaN logits, a user verifier's error): the batch ends
            jobs = [r.key for r in batch.rows]
            del self._batches[key]
            self._fail(jobs, err)
            return
        self.stats.rounds += 1
        self.stats.row_rounds += rows
        self.stats.round_sizes[rows] = self.stats.round_sizes.get(rows, 0) + 1
        self._deliver(batch, out)

    def _deliver(self, batch: RunningBatch, out) -> None:
        """Hand each row its block; end the rows that finished (a limit, a stop token or a stop string)."""
        stopped = []
        for row, block in out:
            job = row.key
            if job.emit is not None and block:
                try:
                    job.emit(list(block))
                except Exception as err:  # the client's side failed: this choice ends
                    stopped.append(row)
                    self._end(job, err)
                    continue
            if job.stop and not row.done:
                text = (
                    job.text(row.tokens)
                    if job.text is not None
                    else self.engine.tokenizer.decode(row.tokens, skip_special_tokens=True)
                )
                if any(s in text for s in job.stop):
                    stopped.append(row)
                    self._end(job, None)
                    continue
            if row.done:
                self._end(job, None)
        if stopped:
            batch.evict([r.key for r in stopped])

    def _end(self, job: Job, err: BaseException | None) -> None:
        if job.future.done():
            return
        if err is None:
            self.stats.finished += 1
        try:
            if err is None:
                job.future.set_result((list(job.row.tokens), list(job.row.block_lengths)))
            else:
                job.future.set_exception(err)
        except InvalidStateError:  # already ended, or cancelled by its caller: the worker goes on
            pass
        if job.group is not None:
            job.group.job_ended(err)

    def _fail(self, jobs, err: Exception) -> None:
        if not isinstance(err, APIError):
            traceback.print_exc(file=sys.stderr)
        for job in jobs:
            self._end(job, err)

    def _shutdown(self) -> None:
        down = APIError(503, "the server is shutting down")
        with self._cv:
            waiting = list(self._waiting)
            self._waiting.clear()
            calls = list(self._calls)
            self._calls.clear()
        for job in waiting:
            self._end(job, down)
        for batch in self._batches.values():
            for row in batch.rows:
                self._end(row.key, down)
        self._batches.clear()
        for _, _, fut in calls:
            fut.set_exception(down)


__all__ = ["Scheduler", "Job", "Stats", "Cancelled"]
