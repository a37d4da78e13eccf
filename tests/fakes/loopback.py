"""What every fake server shares: an aiohttp app on 127.0.0.1 at a free port, and its lifecycle."""

from __future__ import annotations

from typing import Self

from aiohttp import web
from aiohttp.test_utils import TestServer


class LoopbackServer:
    """Subclasses build their app; `async with Fake() as fake:` starts and stops it."""

    _server: TestServer | None = None

    def build_app(self) -> web.Application:
        raise NotImplementedError

    async def before_close(self) -> None:
        """Close what the app holds open, such as websockets."""

    @property
    def root_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return str(self._server.make_url("")).rstrip("/")

    async def start(self) -> Self:
        self._server = TestServer(self.build_app(), host="127.0.0.1", port=0)
        await self._server.start_server()
        return self

    async def close(self) -> None:
        await self.before_close()
        if self._server is not None:
            await self._server.close()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
