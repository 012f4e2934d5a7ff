"""Everything the routes share, reachable from a request as ``request.app[CONTEXT]``."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from fakediscord.changes import Changes
from fakediscord.command_registry import CommandRegistry
from fakediscord.composer import Composer
from fakediscord.fake_time import FakeClock
from fakediscord.faults import FaultPlan
from fakediscord.gateway import Gateway
from fakediscord.holds import Holds
from fakediscord.ids import Snowflakes
from fakediscord.interaction_rules import InteractionRegistry
from fakediscord.journal import Journal
from fakediscord.ratelimits import RateLimits
from fakediscord.signed_urls import Cdn
from fakediscord.world import World


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
    holds: Holds = field(default_factory=Holds)
    #: exceptions raised inside the fake itself (its bugs, not Discord answers)
    crashes: list[Exception] = field(default_factory=list)


CONTEXT = web.AppKey("fakediscord", Context)


def context_of(request: web.Request) -> Context:
    return request.app[CONTEXT]
