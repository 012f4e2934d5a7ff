"""Verdicts for jobs that never got as far as judging results; shared by all graders.

A job that stopped early (time, memory, a crash, an import error) fails with the
sandbox's own words and a hint about the usual cause.  Only ``internal_error`` is an
``error`` verdict: the sandbox broke, so the learner should not lose anything.
"""

from __future__ import annotations

from graders.base import Check, Verdict
from sandbox.api import JobStatus, SandboxResult

HINTS: dict[JobStatus, str] = {
    "load_error": (
        "The grader imports your file before calling your functions, so every top-level "
        "line runs too. Fix the error above, and keep experiments out of the file or under "
        '`if __name__ == "__main__":`.'
    ),
    "exited": "Don't call sys.exit(), exit() or quit(): return results from your functions.",
    "timeout": (
        "The test inputs are small, so a correct solution finishes in well under a second; "
        "look for a loop that never ends (a while loop whose condition never changes)."
    ),
    "memory": (
        "The results are small; look for something that grows without bound, "
        "such as a list appended to inside a loop that never ends."
    ),
    "output_limit": "Remove prints inside loops, and return only the result tensor.",
    "crashed": (
        "The process was killed by the operating system, which plain torch code should "
        "never cause; remove ctypes, signals or other low-level tricks."
    ),
    "protocol_error": (
        "The grading job's reply was unreadable. Submissions must not write to the "
        "process's file descriptors or tamper with the interpreter."
    ),
}
_NOTEBOOK_EXPORT_HINT = (
    "Your file calls get_ipython(), which only exists inside Jupyter: remove those lines "
    "(or upload the .ipynb itself)."
)
_MISSING_MODULE_HINT = "Only torch and the Python standard library are available to submissions."


def job_verdict(task: str, result: SandboxResult) -> Verdict | None:
    """The verdict for a job that did not run to the end, or None when it did."""
    if result.status == "ok":
        return None
    if result.status == "internal_error":
        check = Check("sandbox", False, f"the grading sandbox failed: {result.message}")
        feedback = "This is not your fault and costs you nothing: please submit again later."
        return Verdict(task, "error", 0.0, (check,), feedback, result.wall_s, result.device)
    check = Check("submission runs", False, f"{result.message.rstrip('.')}. {_hint(result)}")
    feedback = "Your file did not run to the end, so no result was checked: see below."
    return Verdict(task, "failed", 0.0, (check,), feedback, result.wall_s, result.device)


def _hint(result: SandboxResult) -> str:
    if result.status == "load_error":
        text = f"{result.message}\n{result.stderr}"
        if "get_ipython" in text:
            return _NOTEBOOK_EXPORT_HINT
        if "ModuleNotFoundError" in text or "No module named" in text:
            return _MISSING_MODULE_HINT
    return HINTS[result.status]
