"""``python -m bot`` and the ``brrrbot`` console script: the command line's first step.

Only ``bot.clean_start`` is imported before a ``grade`` has restarted itself without the
variables a forked sandbox must not inherit; everything else comes after.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["grade"]:
        from bot.clean_start import restart_clean

        restart_clean()
    from bot.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
