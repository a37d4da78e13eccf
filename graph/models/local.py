"""An offline chat model: llama.cpp in-process through xllamacpp.

An instruct model (Qwen2.5-Coder-1.5B-Instruct, the default) speaks through its own chat template:
llama.cpp's chat completions with the system prompt and the history as user/assistant turns. A base
model (Gemma 3 270M) has no template, so a persona turn is a transcript continuation ("...\\nNova:")
cut at the end of the line. Either way a moderator decision or an action is JSON whose shape
llama.cpp enforces with the caller's JSON schema.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import xllamacpp as xlc
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.models.base import UnparsableReply
from graph.models.llama_text import (
    JSON_CUE,
    join_lines,
    persona_chat,
    render_transcript,
    trim_to_fit,
)
from graph.models.local_actions import (
    OfferedTools,
    asked_again,
    decision_prompt,
    decision_schema,
    made_since_the_line,
    newest_human_line,
    tool_call_from,
)
from graph.models.seeds import attempt_seed
from graph.turn_text import RETRY_MESSAGE_ID, split_turn

log = logging.getLogger(__name__)
# Characters a token holds at the least in these models' vocabularies for English text (about 3.4
# measured on the action step's prompt): a prompt of that many characters a token surely fits.
CHARS_PER_TOKEN_AT_LEAST = 3
T = TypeVar("T")

# Free-text JSON strings get at most this many characters, and no escapes (each escape is
# several tokens), so a decision always closes within json_max_tokens.
JSON_STRING_CAP = 100
_NO_ESCAPES = '^[^"\\\\\\x00-\\x1f]*$'
_CONTEXT_RETRIES = 3
EMPTY_REPLY_RETRIES = 2
RETRY_WARMTH = 0.2  # added to the temperature when a draft is written again after review
# An instruct model of 1.5B answers a chat line with a paragraph unless told; every token is model
# time on a CPU, so the persona's system prompt ends with this on the chat-template path.

_servers: dict[tuple[str, int, int], xlc.Server] = {}
_servers_lock = threading.Lock()


class LocalLlamaChatModel(BaseChatModel):
    """Chat model over a local GGUF; one llama.cpp server per (path, threads, context) per process.

    Call-time kwargs (usually via `.bind`): `speaker` (the name whose line is written next),
    `response_format` (OpenAI json_schema style: switches to constrained JSON, where `stop` is
    ignored), `actions` (action names the speaker may propose first, see local_actions.py; `now`, an ISO
    time, dates them), and
    optionally `max_tokens` / `temperature` overrides. Concurrent calls are safe: the llama.cpp
    server queues them on its single slot.
    """

    model_path: str
    n_threads: int = 2
    n_ctx: int = 2048
    max_tokens: int = 96
    json_max_tokens: int = 160
    temperature: float = 0.8
    seed: int | None = None
    chat_template: bool = False  # speak through the model's chat template (an instruct model)

    @property
    def _llm_type(self) -> str:
        return "llama.cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_threads": self.n_threads,
            "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "chat_template": self.chat_template,
        }

    def load(self) -> None:
        """Load the model now rather than on the first call.

        xllamacpp holds the GIL while a model loads (about 1.3 s for Gemma 270M on 2 cores),
        which stalls an event loop even from a worker thread, so call this at startup.
        """
        self._server()

    def _server(self) -> xlc.Server:
        key = (self.model_path, self.n_threads, self.n_ctx)
        with _servers_lock:
            server = _servers.get(key)
            if server is None:
                server = _servers[key] = _start_server(*key)
            return server

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._complete(messages, stop, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # xllamacpp releases the GIL while it generates, so a worker thread keeps the loop free.
        return await asyncio.to_thread(self._complete, messages, stop, kwargs)

    def _complete(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> ChatResult:
        schema = json_schema_of(kwargs.get("response_format"))
        speaker: str | None = kwargs.get("speaker")
        if schema is None and not speaker:
            raise ValueError("LocalLlamaChatModel needs a `speaker` kwarg, e.g. model.bind(speaker='Nova')")
        # The turn's question (graph/turn_text.py) is no line of the conversation: the action step reads
        # the person's line itself, and only a chat template's last user turn takes the question.
        messages, turn = split_turn(messages)
        actions: Sequence[str] = kwargs.get("actions") or ()
        tools: OfferedTools = kwargs.get("mcp_tools") or ()
        if schema is None and (actions or tools) and speaker:
            now = datetime.fromisoformat(kwargs["now"]) if kwargs.get("now") else datetime.now(timezone.utc)
            call = self._propose_action(messages, speaker, actions, now, tools, kwargs.get("read_only_tools") or ())
            if call is not None:
                # The call alone: the approval request says what happens, and the persona speaks
                # once it hears the result, so it can never claim "done" too early.
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])
        max_tokens = int(kwargs.get("max_tokens") or (self.json_max_tokens if schema is not None else self.max_tokens))
        temperature = kwargs.get("temperature")
        request: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": self.temperature if temperature is None else float(temperature),
        }
        if self.seed is not None:
            request["seed"] = self.seed
        if schema is not None:
            # No stop strings here: cutting the JSON short would only make it unparseable.
            request["json_schema"] = bounded_schema(schema)
        else:
            request["stop"] = ["\n", *(stop or [])]
        if schema is None and turn is not None and turn.id == RETRY_MESSAGE_ID and not self.chat_template:
            # A base model reads the review's note as more chat to continue, and answers it ("you've
            # sent your draft"): it gets the same transcript again and a fresh, warmer sample instead.
            # An instruct model reads the note as the instruction it is.
            request["seed"] = attempt_seed(self.seed, "rewrite after review:" + _attempt_input(messages))
            request["temperature"] += RETRY_WARMTH
        if self.chat_template and turn is not None:
            messages = [*messages, turn]  # persona_chat makes it the last user turn
        speak = self._chat_turn if self.chat_template else self._transcript_turn
        result = speak(request, messages, speaker)
        for nudge in range(EMPTY_REPLY_RETRIES if schema is None else 0):
            if reply_text(result, speaker):
                break
            # A small model sometimes ends its line at once; a fresh seed and a little more
            # temperature almost always get a sentence out of it.
            warmer = {
                **request,
                "temperature": request["temperature"] + 0.2 * (nudge + 1),
                "seed": attempt_seed(self.seed, f"nudge {nudge + 1} after seed {request.get('seed')}"),
            }
            result = speak(warmer, messages, speaker)

        choice = result["choices"][0]
        text = reply_text(result, speaker if schema is None else None)
        if schema is not None:
            try:
                json.loads(text)
            except ValueError as exc:
                raise UnparsableReply(text, choice.get("finish_reason")) from exc
        usage = result.get("usage", {})
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
            response_metadata={"model_name": Path(self.model_path).name, "finish_reason": choice.get("finish_reason")},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _propose_action(
        self,
        messages: list[BaseMessage],
        speaker: str,
        actions: Sequence[str],
        now: datetime,
        tools: OfferedTools = (),
        read_only: Sequence[str] = (),
    ) -> dict[str, Any] | None:
        """The action the newest human line asks `speaker` for, under constrained decoding; or None."""
        line = newest_human_line(messages)
        if line is None:
            return None
        made = made_since_the_line(messages)  # asked again in a turn's later step: with the results
        prompt = decision_prompt(
            line,
            speaker,
            actions,
            now,
            tools,
            made,
            full=self.chat_template,
            read_only=read_only,
            max_chars=(self.n_ctx - self.json_max_tokens) * CHARS_PER_TOKEN_AT_LEAST,
        )
        if prompt is None:  # the window is too small for the actions' descriptions: no action step
            log.debug("the action step does not fit a %d-token context: %s replies without one", self.n_ctx, speaker)
            return None
        request = {
            "json_schema": bounded_schema(decision_schema(actions, tools, full=self.chat_template)),
            "max_tokens": self.json_max_tokens,
            "temperature": 0.0,  # a decision, not a voice: the likeliest reading of the request
        }
        if self.chat_template:
            result = self._server().handle_chat_completions({**request, "messages": [_turn("user", prompt)]})
        else:
            result = self._server().handle_completions({**request, "prompt": prompt})
        try:
            call = tool_call_from(reply_text(result), line, speaker)
        except (KeyError, IndexError, ValueError) as exc:
            log.warning("embedded action step gave no usable decision: %s", type(exc).__name__)
            return None
        return None if call is None or asked_again(call, made) else call

    def _transcript_turn(self, request: dict[str, Any], messages: list[BaseMessage], speaker: str | None) -> Result:
        """A base model continues the transcript: "...\\nNova:", or the JSON cue for a decision."""
        header, lines = render_transcript(messages, ai_name=speaker or "Assistant")
        final_line = JSON_CUE if "json_schema" in request else f"{speaker}:"
        return _within_context(
            lambda kept: {**request, "prompt": join_lines(header, kept, final_line)},
            lines,
            lambda kept: len(join_lines(header, kept, final_line)),
            self._server().handle_completions,
        )

    def _chat_turn(self, request: dict[str, Any], messages: list[BaseMessage], speaker: str | None) -> Result:
        """An instruct model answers through its chat template: the system prompt, then the history as
        user/assistant turns (the persona's own lines are its turns). A decision reads the
        conversation as one user turn ending with the JSON cue."""
        if "json_schema" in request:
            header, lines = render_transcript(messages, ai_name="Assistant")
            return _within_context(
                lambda kept: {**request, "messages": _decision_turns(header, kept)},
                lines,
                lambda kept: len(join_lines(header, kept, JSON_CUE)),
                self._server().handle_chat_completions,
            )
        system, turns = persona_chat(messages, speaker or "Assistant")
        return _within_context(
            lambda kept: {
                **request,
                "messages": [_turn("system", system), *(_turn(role, text) for role, text in kept)],
            },
            turns,
            lambda kept: len(system) + sum(len(text) + 8 for _, text in kept),
            self._server().handle_chat_completions,
        )


Result = dict[str, Any]


def _turn(role: str, text: str) -> dict[str, str]:
    return {"role": role, "content": text}


def _decision_turns(header: str, lines: Sequence[str]) -> list[dict[str, str]]:
    return [*([_turn("system", header)] if header else []), _turn("user", join_lines("", lines, JSON_CUE))]


def _within_context(
    build: Callable[[list[T]], Result], items: list[T], size: Callable[[list[T]], int], call: Callable[[Result], Any]
) -> Result:
    """One llama.cpp call; when the prompt overflows n_ctx, again without the oldest items."""
    for _ in range(_CONTEXT_RETRIES):
        request = build(items)
        result: Result = call(request)
        error = result.get("error")
        if not error or error.get("type") != "exceed_context_size_error" or not items:
            break
        items = trim_to_fit(items, size, error, request["max_tokens"])
    if "choices" not in result:
        raise RuntimeError(f"llama.cpp completion failed: {result.get('error', result)}")
    return result


def reply_text(result: Result, speaker: str | None = None) -> str:
    """The generated text of a completion or a chat completion, without the speaker's own name tag
    that a model sometimes opens its line with ("Nova: ...")."""
    choice = result["choices"][0]
    text = str((choice.get("message") or {}).get("content") or choice.get("text") or "").strip()
    if speaker and text.casefold().startswith(f"{speaker.casefold()}:"):
        text = text[len(speaker) + 1 :].strip()
    return text


def _attempt_input(messages: Sequence[BaseMessage]) -> str:
    """What an attempt answers, for its seed: the same conversation gets the same seed."""
    return "\n".join(f"{m.type}:{m.text}" for m in messages)


def _start_server(model_path: str, n_threads: int, n_ctx: int) -> xlc.Server:
    if not Path(model_path).is_file():
        # llama.cpp only reports a generic "Failed to init server" for a missing file.
        raise FileNotFoundError(model_path)
    params = xlc.CommonParams()
    params.model.path = model_path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.verbosity = 1  # errors only
    params.cache_ram_mib = 256  # host-RAM prompt cache: several personas' prompts, not the 8 GiB default
    # xllamacpp always opens an HTTP listener on 127.0.0.1; nothing here uses it, so lock it with an
    # unknown key and give it a single thread. Direct handle_* calls bypass the key check.
    params.n_threads_http = 1
    params.api_keys = [secrets.token_urlsafe(32)]
    return xlc.Server(params)


def json_schema_of(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema in an OpenAI-style response_format, or None for free text."""
    if not isinstance(response_format, dict):
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        return response_format["json_schema"]["schema"]
    if kind == "json_object":
        return response_format.get("schema") or {"type": "object"}
    return None


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of schema that a small model cannot ramble through.

    Compact whitespace, no undeclared object properties, and free-text strings capped at
    JSON_STRING_CAP characters without escape sequences; explicit caller settings win.
    """
    bounded = _bound(copy.deepcopy(schema))
    bounded.setdefault("x-guidance", {"whitespace_flexible": False})  # llguidance: compact JSON
    return bounded


def _bound(node: Any) -> Any:
    if isinstance(node, list):
        return [_bound(item) for item in node]
    if not isinstance(node, dict):
        return node
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions"):
            node[key] = {name: _bound(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
            node[key] = _bound(value)
    if node.get("type") == "object" or "properties" in node:
        node.setdefault("additionalProperties", False)
    if node.get("type") == "string" and not {"enum", "const", "format", "pattern"} & node.keys():
        node.setdefault("maxLength", JSON_STRING_CAP)
        node["pattern"] = _NO_ESCAPES
    return node
