# syntax=docker/dockerfile:1
#
# Two images from one file:
#   docker build --target bot    -t brrrbot-bot .     # the Discord bot: no torch, small
#   docker build --target worker -t brrrbot-worker .  # a grading worker: torch with CUDA
# docker-compose.yml builds both; see docs/operators/deployment.md.
#
# Both install the project the way the README's Quick start does (a venv in the checkout,
# `pip install -e ".[extras]"`), run as the unprivileged user brrrbot (uid/gid 10001), keep
# state only in the /app/data volume and read the quests baked in at /app/quests.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/app/.venv/bin:$PATH \
    QUESTS_DIR=/app/quests

# A fixed uid/gid, so that volume ownership is the same on every host and in every image.
RUN groupadd --gid 10001 brrrbot \
 && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/brrrbot \
        --shell /usr/sbin/nologin brrrbot

WORKDIR /app
# The code and the venv stay owned by root (read-only to the service); only /app/data is
# the service's. The default DATABASE_URL (sqlite+aiosqlite:///./data/brrrbot.sqlite3)
# resolves to /app/data/brrrbot.sqlite3 from this working directory.
RUN python -m venv /app/.venv \
 && mkdir /app/data \
 && chown 10001:10001 /app/data

# ---------------------------------------------------------------------------------------
FROM base AS bot

COPY pyproject.toml README.md ./
COPY bot ./bot
COPY graders ./graders
COPY sandbox ./sandbox
COPY migrations ./migrations
COPY quests ./quests
RUN /app/.venv/bin/pip install -e ".[postgres]" \
 && python -m compileall -q bot graders migrations

VOLUME ["/app/data"]
USER 10001:10001

# The bot's HTTP server (/healthz, /metrics) listens on all of the container's interfaces:
# its default, 127.0.0.1, would let only the healthcheck below reach it, not a Prometheus
# scraping the bot from another container or host. Publish the port only where that
# scraper needs it; the endpoints have no authentication.
ENV HTTP_HOST=0.0.0.0

# Healthy = /healthz answers 200: the Discord gateway is connected and the database answers
# (the bot serves it only after migrating). Live workers are reported, not required (see
# docs/operators/operations.md). A 503 or no answer makes urlopen raise: exit code 1.
# Python, because the slim image has no curl or wget.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('HTTP_PORT', '8080'), timeout=5)"]

# --no-workers: this image has no torch; grading is the worker image's job. (A WORKERS
# value in a shared .env is then ignored here instead of starting a pool that cannot run.)
CMD ["brrrbot", "run", "--no-workers"]

# ---------------------------------------------------------------------------------------
FROM base AS worker

# The same torch release the README's test command pins. From pip's default index (the
# Python Package Index) the Linux x86_64 wheel of this release is the CUDA build (its CUDA
# runtime comes as nvidia-* wheels); the GPU host needs only the NVIDIA driver and the NVIDIA
# Container Toolkit. Installed in its own layer so that code changes do not download it again.
ARG TORCH_VERSION=2.13.0
RUN /app/.venv/bin/pip install "torch==${TORCH_VERSION}"
# torch.compile on CUDA (Triton) builds a small C launcher the first time a kernel runs, so
# learner jobs that compile (the roofline quest's fused kernel) need a C compiler in the
# read-only root the jail binds in. (Unpinned: the distribution's current gcc is the point.)
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*

COPY pyproject.toml README.md ./
COPY bot ./bot
COPY graders ./graders
COPY sandbox ./sandbox
COPY migrations ./migrations
COPY quests ./quests
RUN /app/.venv/bin/pip install "torch==${TORCH_VERSION}" -e ".[worker,postgres]" \
 && python -m compileall -q bot graders migrations

# Ask the NVIDIA runtime for the CUDA libraries (compute) and NVML (utility), whatever its
# default is; GPUs themselves are only exposed when the container requests them.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility

VOLUME ["/app/data"]
USER 10001:10001

# No HEALTHCHECK: no command reports a running worker's health from outside it.
# `brrrbot worker --check` starts a second zygote (torch import, a probe job) and only
# re-tests the host's isolation, which cannot change while the container runs; the
# worker logs the same report at start and exits if the minimum is missing.
CMD ["brrrbot", "worker"]
