"""Let a faked clock reach every process a test starts.

``bench/any_day.sh`` runs the suite under libfaketime, which works through ``LD_PRELOAD`` and
``FAKETIME*`` variables.  Tests start the bot, workers and the CLI with a clean, explicit
environment; these variables are the exception, so the bot lives on the same (faked) day as
the test that drives it.  Outside faketime this adds nothing.
"""

from __future__ import annotations

import os


def faked_clock_env() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if name == "LD_PRELOAD" or name.startswith("FAKETIME")
    }
