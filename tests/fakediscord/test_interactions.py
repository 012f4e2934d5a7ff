"""Each interaction path round-trips between the fake's user side and the real client."""

from __future__ import annotations

import pytest

from fakediscord import InteractionRejected, Reply
from fakediscord.messages import CHAT_INPUT_COMMAND
from tests.fakediscord.conftest import Scene
from tests.fakediscord.sample_bot import TOO_MANY, SampleBot


async def test_a_slash_command_is_answered(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "ping")
    assert await handle.acked() < 3
    reply = await handle.original()
    assert reply.content == "pong"
    assert reply.kind == CHAT_INPUT_COMMAND
    assert handle.response_type is Reply.CHANNEL_MESSAGE
    assert scene.fake.messages_in(scene.general) == [reply]


async def test_an_embed_reply_is_stored_as_sent(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "embed")
    (card,) = (await handle.original()).embeds
    assert card["title"] == "Quest"
    assert card["fields"] == [{"name": "xp", "value": "10", "inline": True}]


async def test_a_too_long_embed_is_refused_with_50035(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "toolong")
    assert (await handle.original()).content == "rejected 50035"
    (refusal,) = handle.rejections
    assert refusal.errors == {
        "data": {
            "embeds": {
                "0": {
                    "title": {
                        "_errors": [
                            {
                                "code": "BASE_TYPE_MAX_LENGTH",
                                "message": "Must be 256 or fewer in length.",
                            }
                        ]
                    }
                }
            }
        }
    }
    assert "In data.embeds.0.title" in bot.failures[0].text


async def test_a_deferred_response_shows_thinking_then_the_edit(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "slow")
    placeholder = await handle.wait_for(lambda m: True)
    assert handle.response_type is Reply.DEFERRED_CHANNEL_MESSAGE
    final = await handle.original()
    assert final is placeholder and final.content == "slow done" and not final.loading
    assert final.edited_timestamp is None


async def test_autocomplete_returns_the_bots_choices(scene: Scene, bot: SampleBot) -> None:
    choices = await scene.fake.invoke_autocomplete(
        scene.guild, scene.general, scene.alice, "topic", focused="name", value="m"
    )
    assert [c["value"] for c in choices] == ["matmul", "memory bandwidth", "mixed precision"]


async def test_more_than_25_choices_are_refused(scene: Scene, bot: SampleBot) -> None:
    with pytest.raises(InteractionRejected) as refused:
        await scene.fake.invoke_autocomplete(
            scene.guild, scene.general, scene.alice, "topic", focused="name", value=TOO_MANY
        )
    assert refused.value.error.code == 50035
    assert refused.value.error.errors is not None
    assert "choices" in refused.value.error.errors["data"]


async def test_a_modal_is_shown_and_submitted(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "feedback")
    modal = await handle.modal()
    assert modal["title"] == "Feedback"
    submitted = await scene.fake.submit_modal(handle, {"feedback:text": "more kernels"})
    reply = await submitted.original()
    assert reply.content == "thanks: more kernels" and reply.ephemeral
    assert scene.fake.messages_in(scene.general) == []


async def test_a_button_click_updates_its_message(scene: Scene, bot: SampleBot) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "vote")
    poll = await handle.original()
    assert poll.components[0]["components"][0]["custom_id"] == "vote:yes"
    click = await scene.fake.click_button(poll, "vote:yes")
    assert await click.acked() < 3
    assert click.response_type is Reply.UPDATE_MESSAGE
    assert poll.content == "voted yes" and poll.components == []


async def test_an_uploaded_file_reaches_the_bot_and_a_file_comes_back(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "upload", attachments=[("solution.py", b"abc")]
    )
    reply = await handle.original()
    assert reply.content == "got 3 bytes"
    (returned,) = reply.attachments
    assert returned.filename == "reversed.bin" and returned.data == b"cba"
    assert (
        len(scene.fake.calls("GET /cdn/attachments/{channel_id}/{attachment_id}/{filename}")) == 1
    )


async def test_subcommands_and_default_member_permissions(scene: Scene, bot: SampleBot) -> None:
    with pytest.raises(PermissionError):
        await scene.fake.invoke_slash(
            scene.guild, scene.general, scene.alice, "admin setup", options={"channel": scene.quiet}
        )
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.bob, "admin setup", options={"channel": scene.quiet}
    )
    assert (await handle.original()).content == f"quests go to <#{scene.quiet.id}>"
    scene.fake.set_command_permission(scene.guild, "admin", scene.alice, allow=True)
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "admin setup", options={"channel": scene.general}
    )
    assert (await handle.original()).content == f"quests go to <#{scene.general.id}>"


async def test_a_dm_to_a_user_with_closed_dms_fails_with_50007(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "dm", options={"user": scene.carol}
    )
    assert (await handle.original()).content == "dm failed 50007"
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "dm", options={"user": scene.bob}
    )
    assert (await handle.original()).content == "dm sent"
    dm = await scene.fake.wait_for_dm(scene.bob)
    assert dm.content == "hello from the bot"


async def test_sending_where_the_bot_may_not_fails_with_50013(scene: Scene, bot: SampleBot) -> None:
    text = f"hi @everyone and <@{scene.alice.id}>"
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.quiet, scene.alice, "announce", options={"text": text}
    )
    assert (await handle.original()).content == "cannot post 50013"
    handle = await scene.fake.invoke_slash(
        scene.guild, scene.general, scene.alice, "announce", options={"text": text}
    )
    await handle.original()
    (posted,) = scene.fake.messages_in(scene.general)
    assert posted.allowed_mentions == {"parse": ["users"], "replied_user": True}
    assert not posted.pings.everyone
    assert posted.pings.users == {scene.alice.id}


async def test_the_original_response_can_be_read_edited_and_deleted(
    scene: Scene, bot: SampleBot
) -> None:
    handle = await scene.fake.invoke_slash(scene.guild, scene.general, scene.alice, "temp")
    gone = await handle.wait_for(lambda m: m.deleted)
    assert gone.content == "temporary!"
    note = await handle.followup()
    assert note.content == "gone soon" and note.ephemeral
    original = "/webhooks/{application_id}/{token}/messages/{message_id}"
    for method in ("GET", "PATCH", "DELETE"):
        assert [r.status for r in scene.fake.calls(f"{method} {original}")] in ([200], [204])
    assert scene.fake.messages_in(scene.general) == []
