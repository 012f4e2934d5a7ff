"""``python -m bot`` is the same as the ``brrrbot`` console script."""

from bot.cli import main

raise SystemExit(main())
