"""The learner's terminal: quests rendered as Markdown for ``brrrbot quests`` (no discord)."""
