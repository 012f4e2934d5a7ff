"""Messages that members write (not the bot), as the Discord client would let them.

What the client refuses, this refuses with ValueError/PermissionError: an empty
or over-long message, files over the server's upload limit, a channel where the
member may not post or attach. Files land on the fake CDN like any upload.
"""

from __future__ import annotations

from collections.abc import Sequence

from fakediscord import send_limits
from fakediscord.bodies import Body
from fakediscord.bodies import Upload as Part
from fakediscord.composer import Composer
from fakediscord.entities import UPLOAD_LIMITS
from fakediscord.invocations import Upload, Where
from fakediscord.messages import Message
from fakediscord.permissions import Permission
from fakediscord.world import World


async def post_as(
    world: World, composer: Composer, where: Where, content: str, files: Sequence[Upload]
) -> Message:
    """Stores and announces the member's message (MESSAGE_CREATE, if the bot listens)."""
    name = where.user.username
    if not content and not files:
        raise ValueError("the client sends no empty message: give content or files")
    if len(content) > send_limits.CONTENT:
        raise ValueError(f"{len(content)} characters is over the {send_limits.CONTENT} limit")
    limit = where.guild.upload_limit if where.guild else UPLOAD_LIMITS[0]
    for filename, data in files:
        if len(data) > limit:
            raise ValueError(f"{filename} is over the {limit}-byte upload limit")
    allowed = world.permissions_in(where.channel, where.user)
    if not allowed & where.channel.send_permission:
        raise PermissionError(f"{name} may not post in #{where.channel.name}")
    if files and not allowed & Permission.ATTACH_FILES:
        raise PermissionError(f"{name} may not attach files in #{where.channel.name}")
    uploads = [Part(index, filename, data) for index, (filename, data) in enumerate(files)]
    return await composer.create(where.channel, where.user, Body({"content": content}, uploads))
