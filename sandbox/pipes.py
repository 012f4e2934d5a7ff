"""A job's data pipes: made by the trusted client, lent to the job, never read by the zygote.

The job reads its request (and a speed trial's inputs) from ``feed`` and writes its results,
stdout and stderr straight to the client.  The zygote only passes the job's ends through
(``sandbox.control`` carries them): no request body, input or result ever enters its
memory, so no later job forked from it can find one there.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, fields

from sandbox import linux


@dataclass(frozen=True)
class Pipe:
    read: int
    write: int

    @classmethod
    def new(cls) -> Pipe:
        return cls(*os.pipe())

    @classmethod
    def several(cls, count: int) -> list[Pipe]:
        """``count`` new pipes, or none (those made are closed) when one cannot be made."""
        made: list[Pipe] = []
        try:
            for _ in range(count):
                made.append(cls.new())
        except OSError:
            for pipe in made:
                os.close(pipe.read)
                os.close(pipe.write)
            raise
        return made


@dataclass(frozen=True)
class JobEnds:
    """The job's side of its data pipes, in the order they travel to the zygote."""

    feed: int  # read end: the request, then a speed trial's inputs
    result: int  # write ends from here on
    stdout: int
    stderr: int

    @property
    def fds(self) -> list[int]:
        return [getattr(self, f.name) for f in fields(self)]

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)


COUNT = len(fields(JobEnds))


@dataclass(frozen=True)
class JobPipes:
    """Both ends of one job's data pipes, on the side that watches the job."""

    feed: Pipe
    result: Pipe
    stdout: Pipe
    stderr: Pipe

    @classmethod
    def new(cls) -> JobPipes:
        pipes = cls(*Pipe.several(COUNT))
        for pipe in (pipes.feed, pipes.result):  # tensors: fewer, larger reads and writes
            linux.widen_pipe(pipe.write)
        return pipes

    def job_ends(self) -> JobEnds:
        return JobEnds(self.feed.read, self.result.write, self.stdout.write, self.stderr.write)
