"""The states a submission and a grading job go through: one enum each, stored as its value.

The columns (``bot.db.models``) read back as these members, and the database refuses any
other value (CHECK constraints, revision 0010).  A ``StrEnum`` member is also its string, so
it compares, formats and serialises as the text stored.
"""

from __future__ import annotations

from enum import StrEnum


class SubmissionStatus(StrEnum):
    """Where an upload is: in line, being graded, or finished with its verdict's status."""

    QUEUED = "queued"
    GRADING = "grading"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # grading failed on our side: not the member's fault, no XP

    @classmethod
    def of_verdict(cls, verdict_status: str) -> SubmissionStatus:
        """The finished state a verdict of ``verdict_status`` (passed, failed, error) leaves."""
        status = cls(verdict_status)
        if status not in FINISHED:
            raise ValueError(f"{verdict_status!r} is not a verdict's status")
        return status


#: a member may have one of these at a time
IN_FLIGHT = (SubmissionStatus.QUEUED, SubmissionStatus.GRADING)
#: a verdict is stored: to settle and deliver
FINISHED = (SubmissionStatus.PASSED, SubmissionStatus.FAILED, SubmissionStatus.ERROR)


class JobStatus(StrEnum):
    """A grading job in the queue."""

    QUEUED = "queued"  # waiting for a worker (again, after a released attempt)
    RUNNING = "running"  # claimed under a lease
    DONE = "done"  # its verdict is written
    DEAD = "dead"  # every attempt failed without a verdict: ended as an internal error


#: jobs still in the queue: waiting or being graded
ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
