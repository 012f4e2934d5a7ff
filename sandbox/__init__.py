"""Run untrusted learner code with torch, fast and contained.

``Zygote`` is the trusted side's handle; ``api`` holds the plain data it
exchanges.  Importing this package never imports torch.
"""

from sandbox.client import SandboxUnavailable, Zygote
from sandbox.codec import clean_name
from sandbox.isolation import format_report, minimum_ok

__all__ = ["SandboxUnavailable", "Zygote", "clean_name", "format_report", "minimum_ok"]
