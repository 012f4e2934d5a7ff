"""The REST API's use cases (personal tokens, submission status): plain modules, no Discord."""
