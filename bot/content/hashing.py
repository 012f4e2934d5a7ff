"""A stable fingerprint of a quest, so the database can tell which version of a
quest a learner's progress was recorded against."""

from __future__ import annotations

import hashlib
import json

from bot.content.schema import Quest


def version_hash(quest: Quest) -> str:
    """sha256 hex of the quest as canonical JSON.

    Defaults are left out, so writing ``days: 1`` explicitly, or a later schema
    adding an optional field, does not change the hash of unchanged content.
    """
    data = quest.model_dump(mode="json", exclude_defaults=True)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
