"""A real llama.cpp OpenAI-compatible server for the benches: xllamacpp's own HTTP listener (the same
server llama-server runs), bound to 127.0.0.1 only, with the model's chat template (jinja) and an API
key. The bench reaches it through Roundtable's `openai` provider, as a user of llama.cpp or Ollama would.
"""

from __future__ import annotations

import secrets
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import xllamacpp as xlc


@dataclass(frozen=True)
class Served:
    base_url: str  # ".../v1", for [llm] base_url
    api_key: str  # for OPENAI_API_KEY


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def llama_server(
    model_path: str, threads: int = 2, n_ctx: int = 2048, startup_seconds: float = 120
) -> Iterator[Served]:
    port = _free_port()
    key = secrets.token_urlsafe(24)
    params = xlc.CommonParams()
    params.model.path = model_path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.api_keys = [key]
    params.n_threads_http = 2
    params.use_jinja = True  # the GGUF's own chat template, tools included, as llama-server --jinja
    params.verbosity = 1
    params.cache_ram_mib = 256
    server = xlc.Server(params)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_seconds
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama.cpp server on {base} did not become healthy")
        time.sleep(0.5)
    try:
        yield Served(f"{base}/v1", key)
    finally:
        del server
