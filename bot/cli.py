"""`python -m bot`: run the configured platforms, the console, show a persona's prompt, or check and try personas."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from bot.app import open_app, provider_config, run
from bot.authoring import check_files, try_persona
from bot.config import Config, ConfigError, ensure_data_dir, load_config, read_text
from bot.console import ConsolePort, ConsoleSession, console_key
from bot.mcp_servers import known_tools
from bot.telemetry import Secrets, configure_logging, mcp_env_names, traced
from graph.models.factory import ProviderError, resolve_provider
from personas import PersonaError

EXIT_CONFIG = 2


def _parser() -> argparse.ArgumentParser:
    prog = "roundtable" if Path(sys.argv[0]).name == "roundtable" else "python -m bot"
    parser = argparse.ArgumentParser(prog=prog, description="Roundtable: multi-persona group chats.")
    parser.add_argument("--config", type=Path, default=Path("config.toml"), help="config file (default: ./config.toml)")
    # Subcommands accept --config too; SUPPRESS keeps their unset default from hiding the top-level one.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="config file (default: ./config.toml)")
    commands = parser.add_subparsers(dest="command")

    commands.add_parser("run", parents=[common], help="run what config.toml and the environment enable (the default)")

    console = commands.add_parser("console", parents=[common], help="chat in a local console channel")
    console.add_argument("--channel", default="general", help="channel name (default: general)")
    console.add_argument(
        "--script", type=Path, help="read lines from FILE ('-' for standard input), print the transcript and exit"
    )
    console.add_argument("--verbose", action="store_true", help="also print the moderator's decisions")

    prompt = commands.add_parser("prompt", parents=[common], help="print the messages a persona would receive next")
    prompt.add_argument("--channel", required=True, help="console channel name or full channel key")
    prompt.add_argument("--persona", required=True, help="persona id")

    persona = commands.add_parser("persona", help="check persona files, or try a persona on one line")
    persona_commands = persona.add_subparsers(dest="persona_command", required=True)
    check = persona_commands.add_parser(
        "check",
        parents=[common],
        help="validate persona TOML files (a directory: its *.toml): one line per problem, exit 2 on any",
    )
    check.add_argument("files", nargs="+", type=Path, metavar="FILE")
    try_ = persona_commands.add_parser(
        "try", parents=[common], help="print a persona's prompt for one line, then one reply; nothing is stored"
    )
    try_.add_argument("persona", metavar="ID|FILE", help="a persona id, or a persona TOML file")
    try_.add_argument("line", help="what you say to it")
    return parser


async def _console(config: Config, channel: str, script: str | None, verbose: bool) -> int:
    port = ConsolePort(verbose=verbose, user=config.settings.bot.console_user)
    async with open_app(config, port) as app:
        session = ConsoleSession(app, channel)
        print(session.banner(), flush=True)
        if script is not None:
            await session.run_script(script)
        else:
            await session.run_interactive()
    return 0


def read_script(path: Path) -> str:
    """The script's text: standard input for "-", else the file (/dev/stdin included)."""
    if str(path) == "-":
        try:
            return sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"standard input: not UTF-8 text (at byte {exc.start})") from None
    if not path.exists():
        raise ConfigError(f"{path}: script file not found")
    return read_text(path)


async def _prompt(config: Config, channel: str, persona_id: str) -> int:
    async with open_app(config, ConsolePort()) as app:
        if persona_id not in app.personas:
            print(f"error: no persona {persona_id!r}; known: {', '.join(app.personas)}", file=sys.stderr)
            return EXIT_CONFIG
        messages = await app.engine.prompt_for(console_key(channel), persona_id)
        for message in messages:
            print(f"--- {message.type} ---\n{message.content}")
        if resolve_provider(provider_config(config), os.environ) == "local":
            from graph.models.llama_text import render_prompt

            # The same prompt in the shape a base model reads: one transcript it continues.
            print(
                f"--- as the embedded model reads it ---\n{render_prompt(messages, app.personas[persona_id].display_name)}"
            )
    return 0


async def _run(config: Config) -> int:
    """Every platform whose tokens are set (Slack, Discord or both) in one process; without any, the console."""
    from bot.platforms import run_platforms

    if not await run_platforms(config, os.environ):
        return await _console(config, "general", None, False)
    return 0


async def _until_stopped(main: Coroutine[Any, Any, int]) -> int:
    """Run `main` until it ends or SIGTERM/SIGINT arrives. A signal stops it the graceful way:
    the platforms stop taking events, running rounds get [bot] shutdown_grace_seconds, and the
    stores close (open_app does both on the way out). A second signal cuts the grace short."""
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        logging.getLogger(__name__).info("stopped by a signal; drained")
        return 0
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("ROUNDTABLE_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "persona" and args.persona_command == "check":
            # Only the files, and the MCP servers of config.toml (and the tools they listed) when there is one.
            tools = known_tools(load_config(args.config)) if args.config.is_file() else None
            return check_files(args.files, tools)
        config = load_config(args.config)
        configure_logging(config.settings.logging.format, secret_names=mcp_env_names(config))
        secrets = Secrets(os.environ, mcp_env_names(config))
        if args.command == "persona":  # nothing is stored: the data directory is not touched
            return run(try_persona(config, args.persona, args.line))
        ensure_data_dir(config)
        if args.command == "console":
            # Read once, before the session: a one-line error now rather than a traceback mid-session,
            # and a pipe (- or /dev/stdin) can only be read once.
            script = None if args.script is None else read_script(args.script)
            with traced(config.settings, secrets):
                return run(_until_stopped(_console(config, args.channel, script, args.verbose)))
        if args.command == "prompt":
            return run(_prompt(config, args.channel, args.persona))
        with traced(config.settings, secrets):
            return run(_until_stopped(_run(config)))
    except (ConfigError, PersonaError, ProviderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
