"""The /admin group: setup, posts, the server's map, XP grants, regrades, export, failed
deliveries.

Registered with ``default_member_permissions`` = Manage Server, and checked
again here on every call (discord.py does not, and server admins can override
command permissions): Manage Server or the configured moderator role.
"""

from __future__ import annotations

import csv
import io
import logging
from datetime import date
from typing import Literal
from zoneinfo import ZoneInfo, available_timezones

import discord
from discord import app_commands
from discord.ext import commands

from bot import audit, clock, guilds
from bot.app import BrrrBot
from bot.content import Quest, check_quest_text
from bot.curriculum import map_edits
from bot.db.models import (
    Guild,
)
from bot.exts.common import (
    UserFacingError,
    display_name,
    find_quest,
    guild_id_of,
    quest_autocomplete,
)
from bot.exts.schedule import PostFailed, Schedule, previous_week
from bot.grading.delivery_failures import failed_deliveries
from bot.grading.intake import IntakeRefused, UploadLimits
from bot.grading.regrade import regrade as regrade_submission
from bot.presentation.delivery_failures import failed_deliveries_text
from bot.presentation.limits import batch_embeds, truncate
from bot.presentation.quests import quest_embeds
from bot.presentation.safety import no_pings
from bot.progress.grants import grant
from bot.progress.leaderboard import standings
from bot.progress.ledger import guild_ledger
from bot.progress.members import ensure_member
from bot.progress.periods import local_date, week_of
from bot.progress.schedule import parse_post_time
from bot.progress.totals import ALL_TIME_KEY

log = logging.getLogger(__name__)

MAX_GRANT = 10_000
MAX_QUEST_YAML = 256 * 1024
Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


async def timezone_autocomplete(
    interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    needle = current.casefold().replace(" ", "_")
    names = sorted(name for name in available_timezones() if needle in name.casefold())
    return [app_commands.Choice(name=name, value=name) for name in names[:25]]


@app_commands.default_permissions(manage_guild=True)
@app_commands.guild_only()
class Admin(commands.GroupCog, group_name="admin", group_description="Moderator commands"):
    def __init__(self, bot: BrrrBot) -> None:
        self.bot = bot
        super().__init__()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        guild_id = guild_id_of(interaction)
        member = interaction.user
        manage = isinstance(member, discord.Member) and member.guild_permissions.manage_guild
        roles = [role.id for role in getattr(member, "roles", [])]
        guild = await self.bot.services.guild(guild_id)
        if guilds.is_moderator(manage_guild=manage, role_ids=roles, guild=guild):
            return True
        raise app_commands.CheckFailure(
            "Only moderators can use /admin: you need Manage Server or the moderator role."
        )

    def _schedule(self) -> Schedule:
        cog = self.bot.get_cog("Schedule")
        assert isinstance(cog, Schedule)
        return cog

    async def _audit(
        self, interaction: discord.Interaction, action: str, target: str, **details: object
    ) -> None:
        await audit.record(
            self.bot.services.sessions,
            guild_id=guild_id_of(interaction),
            actor_user_id=interaction.user.id,
            action=action,
            target=target,
            details=details,
        )

    @app_commands.command(name="setup", description="Where and when the daily quest is posted")
    @app_commands.describe(
        channel="the quest channel",
        time="local post time, HH:MM (default 09:00)",
        timezone="IANA time zone, e.g. Europe/Berlin (default UTC)",
        weekly_day="day of the weekly leaderboard post (default Monday)",
        moderator_role="members with this role may use /admin too",
    )
    @app_commands.autocomplete(timezone=timezone_autocomplete)
    async def setup_(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel,
        time: str = "09:00",
        timezone: str = "UTC",
        weekly_day: Weekday = "Monday",
        moderator_role: discord.Role | None = None,
    ) -> None:
        try:
            parse_post_time(time)
            tz = guilds.parse_timezone(timezone)
        except ValueError as exc:
            raise UserFacingError(str(exc)) from None
        me = channel.guild.me
        perms = channel.permissions_for(me)
        missing = [
            name
            for name, ok in (
                ("View Channel", perms.view_channel),
                ("Send Messages", perms.send_messages),
                ("Embed Links", perms.embed_links),
                ("Attach Files", perms.attach_files),
            )
            if not ok
        ]
        if missing:
            raise UserFacingError(
                f"I cannot post in {channel.mention}: I am missing {', '.join(missing)} there. "
                "Give me those permissions in that channel and run /admin setup again."
            )
        async with self.bot.services.sessions() as session, session.begin():
            guild = await guilds.configure(
                session,
                guild_id=guild_id_of(interaction),
                channel_id=channel.id,
                post_time=time,
                timezone=timezone,
                weekly_day=guilds.WEEKDAYS.index(weekly_day),
                moderator_role_id=moderator_role.id if moderator_role else None,
                actor_user_id=interaction.user.id,
                today=local_date(clock.now(), tz),
            )
        self._schedule().wake()
        role = f" Moderator role: {moderator_role.mention}." if moderator_role else ""
        await interaction.response.send_message(
            f"The daily quest goes to {channel.mention} at {guild.post_time} ({guild.timezone}); "
            f"the weekly leaderboard on {weekly_day}s at the same time.{role} If today's post "
            "time has passed, today's quest is posted within seconds.",
            ephemeral=True,
            allowed_mentions=discord.AllowedMentions.none(),
        )

    async def _configured(self, interaction: discord.Interaction) -> Guild:
        guild = await self.bot.services.guild(guild_id_of(interaction))
        if guild is None or guild.quest_channel_id is None:
            raise UserFacingError("No quest channel is configured yet: run `/admin setup` first.")
        return guild

    @app_commands.command(name="post-quest", description="Post today's (or a) quest now")
    @app_commands.describe(quest="the quest (default: today's)")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def post_quest(self, interaction: discord.Interaction, quest: str | None = None) -> None:
        guild = await self._configured(interaction)
        chosen = None
        if quest:
            chosen = find_quest(await self.bot.services.guild_map(guild.id), quest)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            message = await self._schedule().post_daily(guild, chosen)
        except PostFailed as exc:
            raise UserFacingError(str(exc)) from None
        await self._audit(interaction, "post-quest", f"message:{message.id}", quest=quest)
        await interaction.edit_original_response(content=f"Posted: {message.jump_url}")

    @app_commands.command(name="post-leaderboard", description="Post the weekly leaderboard now")
    @app_commands.describe(week="ISO week like 2026-W48 (default: last week)")
    async def post_leaderboard(
        self, interaction: discord.Interaction, week: str | None = None
    ) -> None:
        guild = await self._configured(interaction)
        tz = ZoneInfo(guild.timezone)
        period = previous_week(guild, clock.now())
        if week:
            try:
                year, number = week.strip().upper().split("-W")
                monday = date.fromisocalendar(int(year), int(number), 1)
            except ValueError:
                raise UserFacingError(
                    f"`{truncate(week, 20)}` is not a week like 2026-W48."
                ) from None
            period = week_of(monday, tz)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            message = await self._schedule().post_weekly(guild, period)
        except PostFailed as exc:
            raise UserFacingError(str(exc)) from None
        await self._audit(interaction, "post-leaderboard", f"week:{period.key}")
        await interaction.edit_original_response(
            content=f"Posted week {period.key}: {message.jump_url}"
        )

    @app_commands.command(name="quest-add", description="Add a quest from a YAML file")
    @app_commands.describe(file="one quest in the same YAML format as quests/*.yaml")
    async def quest_add(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        guild_id = guild_id_of(interaction)
        if not file.filename.lower().endswith((".yaml", ".yml")):
            raise UserFacingError("Attach the quest as a .yaml file.")
        if file.size > MAX_QUEST_YAML:
            raise UserFacingError(
                f"That file is over {MAX_QUEST_YAML // 1024} KiB; a quest is smaller."
            )
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            text = (await file.read()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserFacingError(
                f"`{truncate(file.filename, 80)}` is not UTF-8 text (byte {exc.start})."
            ) from None
        quest, problems = check_quest_text(text, file.filename, self.bot.services.content)
        if quest is None:
            lines = "\n".join(f"• {no_pings(str(p))}" for p in problems[:15])
            more = f"\n… and {len(problems) - 15} more" if len(problems) > 15 else ""
            raise UserFacingError(truncate(f"The quest has problems:\n{lines}{more}", 1900))
        guild_map = await self.bot.services.guild_map(guild_id)
        replaces = any(q.id == quest.id for q in guild_map.quests)
        preview = quest_embeds(
            quest,
            phase_title=guild_map.phase_titles.get(quest.phase, quest.phase),
            library=self.bot.services.content.library,
            heading="Preview" + (" (replaces the current version)" if replaces else ""),
        )
        view = PublishView(self, interaction.user.id, quest)
        first, *rest = batch_embeds(preview)
        more = f" (preview shortened: {len(rest)} more message(s) of text)" if rest else ""
        await interaction.edit_original_response(
            content=f"Publish this quest to the server's map?{more}", embeds=first, view=view
        )

    async def publish(self, interaction: discord.Interaction, quest: Quest) -> None:
        guild_id = guild_id_of(interaction)
        async with self.bot.services.sessions() as session, session.begin():
            await map_edits.publish_quest(
                session,
                guild_id=guild_id,
                quest=quest,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        self.bot.services.forget_map(guild_id)

    @app_commands.command(name="quest-disable", description="Remove a quest from this server's map")
    @app_commands.describe(quest="the quest to disable")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def quest_disable(self, interaction: discord.Interaction, quest: str) -> None:
        guild_id = guild_id_of(interaction)
        found = find_quest(await self.bot.services.guild_map(guild_id), quest)
        async with self.bot.services.sessions() as session, session.begin():
            await map_edits.disable_quest(
                session,
                guild_id=guild_id,
                quest=found,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        self.bot.services.forget_map(guild_id)
        await interaction.response.send_message(
            f"`{found.id}` is no longer on this server's map.", ephemeral=True
        )

    @app_commands.command(name="schedule", description="Post a given quest on a given date")
    @app_commands.describe(quest="the quest", date="local date, YYYY-MM-DD")
    @app_commands.autocomplete(quest=quest_autocomplete)
    async def schedule(self, interaction: discord.Interaction, quest: str, date: str) -> None:
        guild_id = guild_id_of(interaction)
        found = find_quest(await self.bot.services.guild_map(guild_id), quest)
        try:
            day = _parse_date(date)
        except ValueError:
            raise UserFacingError(
                f"`{truncate(date, 20)}` is not a date like 2026-12-01."
            ) from None
        guild = await self.bot.services.guild(guild_id)
        today = local_date(clock.now(), ZoneInfo(guild.timezone if guild else "UTC"))
        if day < today:
            raise UserFacingError(
                f"{day.isoformat()} is in the past (today is {today.isoformat()})."
            )
        async with self.bot.services.sessions() as session, session.begin():
            await map_edits.schedule_quest(
                session,
                guild_id=guild_id,
                quest_id=found.id,
                day=day,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        self.bot.services.forget_map(guild_id)
        await interaction.response.send_message(
            f"`{found.id}` will be the quest of {day.isoformat()}.", ephemeral=True
        )

    @app_commands.command(name="xp", description="Grant (positive) or revoke (negative) XP")
    @app_commands.describe(member="who", amount="XP to add, negative to take away", reason="why")
    async def xp(
        self,
        interaction: discord.Interaction,
        member: discord.Member,
        amount: app_commands.Range[int, -MAX_GRANT, MAX_GRANT],
        reason: app_commands.Range[str, 1, 200],
    ) -> None:
        if amount == 0:
            raise UserFacingError("A grant of 0 XP changes nothing.")
        if not -MAX_GRANT <= amount <= MAX_GRANT:  # Range is only enforced by Discord's client
            raise UserFacingError(
                f"{amount:+,} XP is out of range: grant or revoke at most {MAX_GRANT:,} XP at once."
            )
        guild_id = guild_id_of(interaction)
        guild = await self.bot.services.guild(guild_id)
        async with self.bot.services.sessions() as session, session.begin():
            row = await ensure_member(session, guild_id, member.id, display_name(member))
            result = await grant(
                session,
                guild_id=guild_id,
                member_id=row.id,
                amount=amount,
                reason=reason,
                actor_user_id=interaction.user.id,
                request_id=interaction.id,
                tz=ZoneInfo(guild.timezone if guild else "UTC"),
                now=clock.now(),
            )
        clamped = ""
        if result.applied != result.requested:
            clamped = f" (asked {result.requested:+,}; a total cannot go below 0)"
        await interaction.response.send_message(
            f"{result.applied:+,} XP for {member.mention}{clamped}: their total is now "
            f"{result.new_total:,}. Reason: {no_pings(reason)}",
            ephemeral=True,
            allowed_mentions=discord.AllowedMentions.none(),
        )

    @app_commands.command(name="regrade", description="Grade a submission again")
    @app_commands.describe(submission="the submission number, e.g. 42")
    async def regrade(
        self, interaction: discord.Interaction, submission: app_commands.Range[int, 1]
    ) -> None:
        guild_id = guild_id_of(interaction)
        try:
            await regrade_submission(
                self.bot.services.sessions,
                guild_id=guild_id,
                submission_id=submission,
                guild_map=await self.bot.services.guild_map(guild_id),
                limits=UploadLimits.of(self.bot.services.settings),
                moderator_user_id=interaction.user.id,
            )
        except IntakeRefused as exc:
            raise UserFacingError(str(exc)) from None
        await interaction.response.send_message(
            f"Submission #{submission} is queued for grading again; the member gets the new "
            "verdict by DM, and XP follows the better of the two.",
            ephemeral=True,
        )

    @app_commands.command(name="export", description="The leaderboard and the XP ledger as CSV")
    async def export(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        async with self.bot.services.reads() as session:
            board = await standings(session, guild_id, "all", ALL_TIME_KEY, limit=1_000_000)
            ledger = await guild_ledger(session, guild_id)
        board_csv = _csv(
            ["rank", "user_id", "display_name", "xp"],
            [[e.rank, e.user_id, e.display_name, e.xp] for e in board],
        )
        ledger_csv = _csv(
            [
                "id",
                "created_at",
                "user_id",
                "display_name",
                "amount",
                "source",
                "reason",
                "reference",
            ],
            [
                [
                    x.id,
                    x.created_at.isoformat(),
                    x.user_id,
                    x.display_name,
                    x.amount,
                    x.source,
                    x.reason,
                    x.reference,
                ]
                for x in ledger
            ],
        )
        await interaction.edit_original_response(
            content=f"Leaderboard ({len(board)} members) and XP ledger ({len(ledger)} rows).",
            attachments=[
                discord.File(io.BytesIO(board_csv), filename="leaderboard.csv"),
                discord.File(io.BytesIO(ledger_csv), filename="xp_ledger.csv"),
            ],
        )

    @app_commands.command(name="deliveries", description="Verdicts the bot gave up delivering")
    async def deliveries(self, interaction: discord.Interaction) -> None:
        async with self.bot.services.reads() as session:
            failed = await failed_deliveries(session, guild_id_of(interaction))
        await interaction.response.send_message(
            failed_deliveries_text(failed),
            ephemeral=True,
            allowed_mentions=discord.AllowedMentions.none(),
        )


class PublishView(discord.ui.View):
    def __init__(self, cog: Admin, moderator_id: int, quest: Quest) -> None:
        super().__init__(timeout=15 * 60)
        self.cog = cog
        self.moderator_id = moderator_id
        self.quest = quest

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.moderator_id:
            await interaction.response.send_message(
                "Only the moderator who uploaded it can publish it.", ephemeral=True
            )
            return False
        return True

    @discord.ui.button(label="Publish", style=discord.ButtonStyle.success)
    async def publish(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        await self.cog.publish(interaction, self.quest)
        self.stop()
        await interaction.response.edit_message(
            content=f"Published `{self.quest.id}`: it is on this server's map now.",
            embeds=[],
            view=None,
        )

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        self.stop()
        await interaction.response.edit_message(
            content="Cancelled; nothing changed.", embeds=[], view=None
        )


def _parse_date(text: str) -> date:
    return date.fromisoformat(text.strip())


def _csv(header: list[str], rows: list[list[object]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


async def setup(bot: BrrrBot) -> None:
    await bot.add_cog(Admin(bot))
