"""What a test holds after it invokes something: the interaction, seen from the user's side.

It answers "how fast was it acknowledged", "what does the response say now",
"what follow-ups came", "what did Discord refuse" and "did it go unanswered"
(the user then sees "This interaction failed"), waiting where needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fakediscord.changes import Changes
from fakediscord.errors import ApiError
from fakediscord.fake_time import FakeClock
from fakediscord.interaction_rules import RESPONSE_DEADLINE, InteractionRecord, Reply
from fakediscord.messages import Message
from fakediscord.world import World

T = TypeVar("T")


class InteractionRejected(Exception):
    """Discord refused the bot's answer (for autocomplete and modals there is no second try)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(f"Discord refused the response: {error}")
        self.error = error


class InteractionHandle:
    def __init__(
        self, record: InteractionRecord, world: World, changes: Changes, clock: FakeClock
    ) -> None:
        self.record = record
        self._world = world
        self._changes = changes
        self._clock = clock

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def token(self) -> str:
        return self.record.token

    @property
    def response_type(self) -> Reply | None:
        return self.record.reply

    @property
    def rejections(self) -> list[ApiError]:
        """Every request about this interaction Discord refused, oldest first."""
        return list(self.record.rejections)

    @property
    def followups(self) -> list[Message]:
        return [self._world.messages[m] for m in self.record.followup_ids]

    async def acked(self, timeout: float = 3.5) -> float:
        """Seconds from dispatch to the first accepted response (real time, not the fake clock)."""
        acked_at = await self._until(lambda: self.record.acked_at, timeout, "the first response")
        return acked_at - self.record.dispatched_at

    async def unanswered(self) -> None:
        """Waits out Discord's 3 s response deadline (fake clock: advance it to wait less) and
        raises AssertionError if the bot responded; afterwards the interaction is dead."""
        left = self.record.created_at + RESPONSE_DEADLINE - self._clock.now()
        try:
            await self._changes.until(lambda: self.record.reply, max(left, 0.0), "no response")
        except TimeoutError:
            self.record.expired = True
            return
        raise AssertionError(f"the bot answered the interaction ({self.record.reply!r})")

    async def original(self, timeout: float = 5.0) -> Message:
        """The response message once it has real content (a deferred placeholder is filled)."""
        return await self.wait_for(lambda m: not m.loading, timeout)

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 5.0) -> Message:
        """The response message once ``predicate`` holds for it (checked on every change)."""

        def check() -> Message | None:
            message = self._world.messages.get(self.record.original_id or 0)
            return message if message is not None and predicate(message) else None

        return await self._until(check, timeout, "the response message to match")

    async def followup(
        self, predicate: Callable[[Message], bool] = lambda m: True, timeout: float = 5.0
    ) -> Message:
        """The first follow-up message matching ``predicate``."""
        return await self._until(
            lambda: next((m for m in self.followups if predicate(m)), None),
            timeout,
            "a matching follow-up",
        )

    async def rejected(self, timeout: float = 5.0) -> ApiError:
        """The first refusal; for tests that expect the bot's answer to fail."""
        return await self._until(
            lambda: self.record.rejections[0] if self.record.rejections else None,
            timeout,
            "Discord to refuse a response",
        )

    async def choices(self, timeout: float = 3.5) -> list[dict[str, Any]]:
        """The autocomplete choices the bot returned."""
        return await self._until_accepted(lambda: self.record.choices, timeout, "choices")

    async def modal(self, timeout: float = 3.5) -> dict[str, Any]:
        """The modal the bot answered with (``custom_id``, ``title``, ``components``)."""
        return await self._until_accepted(lambda: self.record.modal, timeout, "a modal")

    async def _until_accepted(self, found: Callable[[], T | None], timeout: float, what: str) -> T:
        def check() -> T | None:
            value = found()
            if value is None and self.record.rejections:
                raise InteractionRejected(self.record.rejections[-1])
            return value

        return await self._until(check, timeout, what)

    async def _until(self, check: Callable[[], T | None], timeout: float, what: str) -> T:
        try:
            return await self._changes.until(check, timeout, what)
        except TimeoutError as error:
            refused = ", ".join(str(e) for e in self.record.rejections) or "none"
            raise TimeoutError(f"{error} (refused requests: {refused})") from None
