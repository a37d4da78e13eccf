"""Records docs/tools.md's worked example: a console session with the reference time server from PyPI
(mcp-server-time over stdio, `read_only = ["get_current_time"]`, Rex may use its tools), once on the
embedded default model and once on the real Gemini SDK against the fake Gemini server (whose answers
are queued here; the tool and its answer are real). Prints both transcripts, and for the fake Gemini
run the functionResponse its second request carried.

Run from the repository root: python bench/mcp_example.py [embedded|gemini]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.app import open_app  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from tests.conftest import write_config  # noqa: E402
from tests.fakes.gemini_server import FakeGemini  # noqa: E402

KEY = "console:general"
MODEL_CACHE = Path.home() / ".cache" / "roundtable-test"
PARIS = "Rex, what is the current time in 'Europe/Paris'?"
TOKYO = "Rex, convert the time '12:00' from 'UTC' to 'Asia/Tokyo'"


def sections(work: Path, provider: str) -> dict[str, dict[str, Any]]:
    personas = work / "personas"
    personas.mkdir(exist_ok=True)
    for source in (ROOT / "personas").glob("*.toml"):
        text = source.read_text(encoding="utf-8")
        (personas / source.name).write_text(text + ('\ntools = ["time"]\n' if source.stem == "rex" else ""), "utf-8")
    return {
        "bot": {"personas_dir": str(personas)},
        "llm": {"provider": provider, "local": {"cache_dir": str(MODEL_CACHE)}},
        "moderation": {"max_turns": 1},
        "mcp": {
            "servers": {
                "time": {
                    "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
                    "read_only": ["get_current_time"],
                }
            }
        },
    }


async def session(work: Path, provider: str, lines: list[str], models: Any = None) -> list[str]:
    config = load_config(write_config(work, sections(work, provider)))
    transcript: list[str] = []
    async with open_app(config, ConsolePort(transcript.append), models=models, environ={}) as app:
        for _ in range(600):
            if app.mcp is None or await app.mcp.not_ready("time") is None:
                break
            await asyncio.sleep(0.1)
        for number, text in enumerate(lines):
            transcript.append(f"[you] {text}")
            reply = await app.service.handle(Inbound(KEY, "you", "you", text, event_id=f"example-{number}"))
            if reply is not None:
                transcript.append(f"[system] {reply.reply}")
            await app.service.wait_idle(KEY)
    return transcript


async def embedded(work: Path) -> list[str]:
    return await session(work, "local", ["/tools", PARIS, TOKYO, "/approvals"])


async def gemini(work: Path) -> list[str]:
    async with FakeGemini(reply_text="Happy to help.") as fake:
        fake.queue("", {"name": "get_current_time", "args": {"timezone": "Europe/Paris"}})
        fake.queue("Paris is on Central European time now, an hour ahead of UTC.")
        fake.queue(
            "Let me convert that.",
            {
                "name": "convert_time",
                "args": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            },
        )
        fake.queue("When it is 12:00 in UTC, it is 21:00 in Tokyo, nine hours ahead.")
        config = ProviderConfig(provider="gemini", base_url=fake.url, requests_per_minute=60_000)
        models = build_models(config, {"GOOGLE_API_KEY": "fake-key"})
        transcript = await session(work, "gemini", [PARIS, TOKYO, "/approve 2"], models)
        seen: set[str] = set()
        for number, request in enumerate(fake.requests, start=1):
            for content in request.body.get("contents", []):
                for part in content.get("parts", []):
                    shown = json.dumps(part.get("functionResponse"))
                    if "functionResponse" in part and shown not in seen:
                        seen.add(shown)
                        transcript.append(f"# request {number} to the fake Gemini carried: {shown}")
    return transcript


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "embedded"
    with tempfile.TemporaryDirectory() as scratch:
        lines = asyncio.run(embedded(Path(scratch)) if which == "embedded" else gemini(Path(scratch)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
