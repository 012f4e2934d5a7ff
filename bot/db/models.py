"""SQLAlchemy 2.0 models: the single source of the schema the migrations build.

Discord ids (snowflakes) are 64-bit, hence ``BigInteger``.  Every timestamp is
a ``UTCDateTime``.  The XP ledger is append-only: rows are only ever inserted
(the migration adds triggers that refuse UPDATE and DELETE), and totals are
sums over it.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bot.db.states import JobStatus, SubmissionStatus
from bot.db.types import UTCDateTime, utcnow
from graders.base import Bound

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


def _states(states: type[StrEnum], name: str = "status") -> Enum:
    """A status column: VARCHAR(16) holding the member's value, read back as the member, and
    a CHECK constraint ``ck_<table>_<name>`` that refuses any other value."""
    return Enum(
        states,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [member.value for member in members],
        validate_strings=True,
    )


class CreatedAt:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Guild(CreatedAt, Base):
    """Per-server settings: where and when the quest posts, who moderates."""

    __tablename__ = "guilds"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    quest_channel_id: Mapped[int | None] = mapped_column(BigInteger)
    post_time: Mapped[str] = mapped_column(String(5), default="09:00")  # HH:MM, local time
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")  # IANA name
    moderator_role_id: Mapped[int | None] = mapped_column(BigInteger)
    weekly_post_day: Mapped[int] = mapped_column(SmallInteger, default=0)  # Monday = 0
    schedule_start: Mapped[date | None] = mapped_column(Date)  # local day 0 of the map walk
    #: "stack" keeps every level role reached; "highest" only the highest
    level_role_mode: Mapped[str] = mapped_column(String(8), default="stack", server_default="stack")
    #: given to the week's first place(s) when the weekly leaderboard is posted
    champion_role_id: Mapped[int | None] = mapped_column(BigInteger)
    #: each daily post opens a public discussion thread
    discussion_threads: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: the server's boards, map and member pages are public on the web listener (opt-in); no
    #: Python default, so an insert leaves it to the database, as inserts before 0012 did
    web_pages: Mapped[bool] = mapped_column(Boolean, server_default=false())
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Member(CreatedAt, Base):
    """A learner in one server (the same user in two servers is two members).

    A member who deleted their data keeps the row (the append-only ledger points at it) but it
    no longer names them: ``user_id`` becomes ``-id`` and ``anonymised_at`` is set.
    """

    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("guild_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(BigInteger)
    display_name: Mapped[str] = mapped_column(String(100), default="")
    #: left off every public board (``/privacy hide``)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    anonymised_at: Mapped[datetime | None]
    #: lets members who passed a task read this member's passing solution (``/privacy share``)
    #: (server default only, and deferred: inserts and whole-row reads leave it out, so the
    #: rest of the model works on a database before revision 0015; read it by name)
    shares_solutions: Mapped[bool] = mapped_column(Boolean, server_default=false(), deferred=True)


class GuildQuest(CreatedAt, Base):
    """A quest as this server knows it: a snapshot of its content and its hash.

    Map quests are snapshotted when first published; quests added by
    moderators live only here.  ``enabled`` lets a server drop a quest from
    its map without losing history.
    """

    __tablename__ = "guild_quests"
    __table_args__ = (UniqueConstraint("guild_id", "quest_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    quest_id: Mapped[str] = mapped_column(String(64))
    origin: Mapped[str] = mapped_column(String(16))  # "map" | "added"
    content: Mapped[dict[str, Any]]
    version_hash: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    added_by_user_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class QuestSchedule(CreatedAt, Base):
    """A moderator's choice of quest for one local date, overriding the map order."""

    __tablename__ = "quest_schedule"
    __table_args__ = (UniqueConstraint("guild_id", "on_date"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    on_date: Mapped[date] = mapped_column(Date)
    quest_id: Mapped[str] = mapped_column(String(64))
    created_by_user_id: Mapped[int | None] = mapped_column(BigInteger)


class Submission(CreatedAt, Base):
    """An uploaded file and its latest verdict; the bytes are kept for regrades.

    ``verdict`` is the one stored copy of the verdict (``Verdict.to_json()``), written by the
    job that graded it; ``status`` is one of ``SubmissionStatus``.
    """

    __tablename__ = "submissions"
    __table_args__ = (
        Index(None, "member_id", "created_at"),
        Index(None, "guild_id", "task_ref", "status"),  # a task's passing solutions
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    task_ref: Mapped[str] = mapped_column(String(129))  # QUEST/TASK
    quest_version: Mapped[str | None] = mapped_column(String(64))
    filename: Mapped[str] = mapped_column(String(255))
    file_kind: Mapped[str] = mapped_column(String(8))  # "py" | "ipynb"
    content: Mapped[bytes] = mapped_column(LargeBinary)
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[SubmissionStatus] = mapped_column(
        _states(SubmissionStatus), default=SubmissionStatus.QUEUED
    )
    score: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[dict[str, Any] | None]
    finished_at: Mapped[datetime | None]
    # Where the verdict goes: the interaction (token) while it lives, else DM, else channel.
    reply_token: Mapped[str | None] = mapped_column(String(255))
    reply_expires_at: Mapped[datetime | None]
    reply_channel_id: Mapped[int | None] = mapped_column(BigInteger)
    # After the verdict: XP paid for it (kept so a restart re-sends the same message) and delivery.
    settled_at: Mapped[datetime | None]
    award: Mapped[dict[str, Any] | None]
    delivered_at: Mapped[datetime | None]
    delivered_via: Mapped[str | None] = mapped_column(String(16))  # edit | dm | channel
    # A delivery that failed is retried with backoff; after the last try it is marked failed
    # (and shown to moderators) instead of holding back the verdicts behind it.
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_delivery_at: Mapped[datetime | None]
    delivery_error: Mapped[str | None] = mapped_column(Text)
    delivery_failed_at: Mapped[datetime | None]


class GradingJob(CreatedAt, Base):
    """The queue: one row per grading attempt series of a submission.

    A worker claims a queued job by setting ``lease_owner`` and
    ``lease_expires_at`` in one conditional UPDATE; a job whose lease expired
    is claimable again until ``attempts`` reaches ``max_attempts``.
    """

    __tablename__ = "grading_jobs"
    __table_args__ = (Index(None, "status", "available_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[JobStatus] = mapped_column(_states(JobStatus), default=JobStatus.QUEUED)
    #: what the task needs from a worker (see bot.jobs.capabilities)
    needs_cuda: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    min_gpu_memory_mib: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[datetime | None]
    available_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    #: the job's verdict is the submission's (``Submission.verdict``), stored there alone
    error: Mapped[str | None] = mapped_column(Text)
    #: everything grading needs (``bot.jobs.job_spec.JobSpec``); None on jobs queued
    #: before revision 0005
    spec: Mapped[dict[str, Any] | None]


class WorkerHeartbeat(Base):
    """A grading worker that is alive, and what it can run.

    Workers refresh ``last_seen_at`` every few seconds; the bot reads the table to tell a
    member at once when no worker able to grade their task has been seen recently.
    """

    __tablename__ = "worker_heartbeats"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    cuda: Mapped[bool] = mapped_column(Boolean, default=False)
    gpu_name: Mapped[str | None] = mapped_column(String(128))
    gpu_memory_mib: Mapped[int] = mapped_column(Integer, default=0)
    # the host's CPU model and the roofline the worker measured at start (bot.worker.peaks)
    cpu_model: Mapped[str | None] = mapped_column(String(128))
    peak_gbs: Mapped[float | None] = mapped_column(Float)
    peak_gflops: Mapped[float | None] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class XpEntry(CreatedAt, Base):
    """One append-only XP movement; ``idempotency_key`` makes awards happen once."""

    __tablename__ = "xp_ledger"
    __table_args__ = (Index(None, "guild_id", "created_at"), Index(None, "member_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    amount: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16))  # task | quiz | self | streak | admin
    reference: Mapped[str | None] = mapped_column(String(200))
    idempotency_key: Mapped[str] = mapped_column(String(200), unique=True)


class PostLog(CreatedAt, Base):
    """Scheduled posts; the unique (guild, kind, period) key makes each happen once."""

    __tablename__ = "post_log"
    __table_args__ = (UniqueConstraint("guild_id", "kind", "period"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))  # "daily_quest" | "weekly_leaderboard"
    period: Mapped[str] = mapped_column(String(32))  # "2026-11-29" | "2026-W48"
    status: Mapped[str] = mapped_column(String(16), default="pending")
    channel_id: Mapped[int | None] = mapped_column(BigInteger)
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    details: Mapped[dict[str, Any] | None]
    posted_at: Mapped[datetime | None]
    #: the messages of a multi-part post sent so far, in order, so a retry resumes after them
    sent_message_ids: Mapped[list[Any] | None]


class AuditEntry(CreatedAt, Base):
    """A moderator action: who did what to whom, with the arguments."""

    __tablename__ = "audit_log"
    __table_args__ = (Index(None, "guild_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    actor_user_id: Mapped[int] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class MemberXp(Base):
    """Derived XP sums per member and period, kept so leaderboards never sum the ledger.

    One row per member for ``("all", "all")`` and for each local week (``"week"``,
    ``"2026-W48"``) and month (``"month"``, ``"2026-11"``) they earned in.  Rows are updated in
    the same transaction as each ledger insert and can be rebuilt from the ledger, which stays
    the source of truth.  ``reached_at`` is when the row's ``xp`` was reached: it breaks ties in
    favour of whoever got there first.
    """

    __tablename__ = "member_xp"

    member_id: Mapped[int] = mapped_column(
        ForeignKey("members.id", ondelete="CASCADE"), primary_key=True
    )
    period_kind: Mapped[str] = mapped_column(String(8), primary_key=True)  # all | week | month
    period_key: Mapped[str] = mapped_column(String(16), primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    xp: Mapped[int] = mapped_column(Integer)
    reached_at: Mapped[datetime]
    #: False while the member is hidden or anonymised: kept for their own profile, off the boards
    listed: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


# A leaderboard page and a rank are one range scan of this index, in leaderboard order.
Index(
    "ix_member_xp_leaderboard",
    MemberXp.guild_id,
    MemberXp.period_kind,
    MemberXp.period_key,
    MemberXp.listed,
    MemberXp.xp.desc(),
    MemberXp.reached_at,
    MemberXp.member_id,
)


class MemberXpCount(Base):
    """How many listed members of a leaderboard sit at each XP value (only values above 0).

    Derived from ``member_xp`` in the same transaction, so a rank or a board's size is a sum over
    the distinct XP values ahead, not a count over every member ahead.  Without a rowid, SQLite
    stores the rows in primary-key order, so those sums read one contiguous range.
    """

    __tablename__ = "member_xp_counts"
    __table_args__ = ({"sqlite_with_rowid": False},)

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    period_kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    period_key: Mapped[str] = mapped_column(String(16), primary_key=True)
    xp: Mapped[int] = mapped_column(Integer, primary_key=True)
    members: Mapped[int] = mapped_column(Integer)


class LevelRole(CreatedAt, Base):
    """A Discord role given to members who reach a level (``/admin roles``)."""

    __tablename__ = "level_roles"
    __table_args__ = (UniqueConstraint("guild_id", "role_id"),)

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    level: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    role_id: Mapped[int] = mapped_column(BigInteger)


class RoleGrant(Base):
    """A role the bot gave a member and has not taken back: what it believes Discord holds."""

    __tablename__ = "role_grants"

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    role_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    granted_at: Mapped[datetime] = mapped_column(default=utcnow)


class RoleSync(Base):
    """A member whose roles may differ from what their XP and titles call for.

    Queued in the same transaction as the change (a ledger row, a new level role, a champion),
    so a restart loses none; drained one member at a time, in the order of ``due_at``.
    """

    __tablename__ = "role_sync_queue"
    __table_args__ = (Index(None, "due_at"),)

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    due_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)


class WeeklyChampion(CreatedAt, Base):
    """A first place of a posted week: the holder of the champion role until the next post."""

    __tablename__ = "weekly_champions"

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    period: Mapped[str] = mapped_column(String(16), primary_key=True)  # "2026-W48"
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)


class QuestDraft(CreatedAt, Base):
    """A quest a moderator uploaded with ``/admin quest-add``, awaiting Publish.

    Kept in the database so the preview's buttons still work after a restart, until
    ``expires_at``.
    """

    __tablename__ = "quest_drafts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    moderator_user_id: Mapped[int] = mapped_column(BigInteger)
    filename: Mapped[str] = mapped_column(String(255))
    text: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime]


class BotState(Base):
    """Small facts the bot keeps between runs, e.g. the hash of the commands last synced."""

    __tablename__ = "bot_state"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ApiToken(CreatedAt, Base):
    """A member's personal API token for one server (``/token new``), stored as its SHA-256.

    One row per member: a new token replaces the old one in place, ``/token revoke`` sets
    ``revoked_at``.  A plain hash is enough because the token is 256 random bits, not a
    password: there is nothing to guess a dictionary for, so a slow hash would only slow
    every request.
    """

    __tablename__ = "api_tokens"

    guild_id: Mapped[int] = mapped_column(
        ForeignKey("guilds.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]


class SpeedRecord(CreatedAt, Base):
    """One speed trial of a passing submission: reference/learner, timed by the worker.

    The boards rank each member's best ``board_ratio`` (a lower confidence bound of the median
    ``ratio``) per task and ``device`` (a CPU model or GPU name): ratios are only comparable on
    the same kind of hardware, and only among rows of one ``instrument``.  Rows of an older
    instrument than ``graders.base.SPEED_INSTRUMENT`` are retired: kept, never ranked.  A row a
    moderator voided (``voided_at`` set, ``bot.progress.speed_voids``) ranks nowhere until
    restored.
    """

    __tablename__ = "speed_results"
    __table_args__ = (
        Index(
            "ix_speed_results_guild_id_task_ref_instrument_device",
            "guild_id",
            "task_ref",
            "instrument",
            "device",
            "board_ratio",
        ),
        Index(None, "member_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), unique=True
    )
    task_ref: Mapped[str] = mapped_column(String(129))
    device: Mapped[str] = mapped_column(String(128))
    ratio: Mapped[float] = mapped_column(Float)
    learner_s: Mapped[float] = mapped_column(Float)
    reference_s: Mapped[float] = mapped_column(Float)
    spread: Mapped[float] = mapped_column(Float)
    pairs: Mapped[int] = mapped_column(Integer)
    instrument: Mapped[int] = mapped_column(Integer)  # which instrument measured it
    board_ratio: Mapped[float] = mapped_column(Float)  # what the boards rank
    # what places it on a roofline (``graders.base.SpeedResult``); NULL before revision 0011
    moved_bytes: Mapped[int | None] = mapped_column(BigInteger)
    flops: Mapped[int | None] = mapped_column(BigInteger)
    achieved_gbs: Mapped[float | None] = mapped_column(Float)
    reference_gbs: Mapped[float | None] = mapped_column(Float)
    achieved_gflops: Mapped[float | None] = mapped_column(Float)
    reference_gflops: Mapped[float | None] = mapped_column(Float)
    peak_gbs: Mapped[float | None] = mapped_column(Float)
    peak_gflops: Mapped[float | None] = mapped_column(Float)
    bound: Mapped[Bound | None] = mapped_column(_states(Bound, "bound"))
    # a moderator's void (``bot.progress.speed_voids``): struck from every board while set
    voided_at: Mapped[datetime | None]
    void_reason: Mapped[str | None] = mapped_column(String(200))
    voided_by: Mapped[int | None] = mapped_column(BigInteger)  # the moderator's user id
    void_notified_at: Mapped[datetime | None]  # when the member was told of the void
    #: its submission was made after the member opened the task's shared solutions
    #: (``bot.progress.solutions``): marked on the boards, ranked below every result made before
    after_reading: Mapped[bool] = mapped_column(Boolean, server_default=false())


class SolutionRead(Base):
    """The first time a member opened a task's shared solutions (``/solutions``): their speed
    results of the task submitted since rank below those made before.  Never changes XP."""

    __tablename__ = "solution_reads"
    __table_args__ = (UniqueConstraint("member_id", "task_ref"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    task_ref: Mapped[str] = mapped_column(String(129))
    opened_at: Mapped[datetime]


class SolutionFingerprint(Base):
    """One winnowed fingerprint of a passing submission's code (``bot.similarity``): the hash
    index finds the earlier passing submissions of the same task that share it, without reading
    any other row.  Replaced when the submission is settled again; gone with the submission."""

    __tablename__ = "solution_fingerprints"
    __table_args__ = (
        # covering: a lookup by hash reads the index alone
        Index(
            "ix_solution_fingerprints_task_hash",
            "guild_id",
            "task_ref",
            "hash",
            "submission_id",
            "member_id",
        ),
        UniqueConstraint("submission_id", "hash"),  # also finds a submission's rows
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    task_ref: Mapped[str] = mapped_column(String(129))
    hash: Mapped[int] = mapped_column(BigInteger)  # 63-bit, never negative


class NearCopy(CreatedAt, Base):
    """A passing submission at least ``bot.similarity.fingerprints.THRESHOLD`` alike to an
    earlier passing one of the same task by another member: for moderators only, no penalty.
    ``score`` is the Jaccard index of the two fingerprint sets."""

    __tablename__ = "near_copies"
    __table_args__ = (
        UniqueConstraint("submission_id", "earlier_submission_id"),
        Index(None, "guild_id", "task_ref", "created_at"),
        Index(None, "member_id"),
        Index(None, "earlier_member_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guild_id: Mapped[int] = mapped_column(ForeignKey("guilds.id", ondelete="CASCADE"))
    task_ref: Mapped[str] = mapped_column(String(129))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    earlier_submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE")
    )
    earlier_member_id: Mapped[int] = mapped_column(ForeignKey("members.id", ondelete="CASCADE"))
    score: Mapped[float] = mapped_column(Float)
