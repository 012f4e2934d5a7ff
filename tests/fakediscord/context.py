"""Everything the routes share, reachable from a request as ``request.app[CONTEXT]``."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from tests.fakediscord.cdn import Cdn
from tests.fakediscord.changes import Changes
from tests.fakediscord.clock import FakeClock
from tests.fakediscord.commands import CommandRegistry
from tests.fakediscord.composer import Composer
from tests.fakediscord.faults import FaultPlan
from tests.fakediscord.gateway import Gateway
from tests.fakediscord.ids import Snowflakes
from tests.fakediscord.interactions import InteractionRegistry
from tests.fakediscord.journal import Journal
from tests.fakediscord.ratelimits import RateLimits
from tests.fakediscord.world import World


@dataclass
class Context:
    token: str
    clock: FakeClock
    ids: Snowflakes
    world: World
    changes: Changes
    gateway: Gateway
    composer: Composer
    commands: CommandRegistry
    interactions: InteractionRegistry
    cdn: Cdn
    faults: FaultPlan
    journal: Journal
    ratelimits: RateLimits
    #: exceptions raised inside the fake itself (its bugs, not Discord answers)
    crashes: list[Exception] = field(default_factory=list)


CONTEXT = web.AppKey("fakediscord", Context)


def context_of(request: web.Request) -> Context:
    return request.app[CONTEXT]
