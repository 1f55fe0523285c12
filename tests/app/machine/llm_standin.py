"""A stand-in for an OpenAI-compatible chat model, for the LLM client's tests.

Tests cannot reach a real model. :class:`StandInModel` answers pairwise prompts rendered from
``labeling.machine.llm_prompts.PAIRWISE_V1`` from a hidden truth (a utility per document
text): with probability ``bias`` it names the first-shown passage ("A") whatever the truth,
otherwise the passage of higher utility, flipped with probability ``error``. A graded prompt
(``GRADED_V1``) gets the digit ``min(4, max(0, ⌊utility · grade_scale⌋))``, replaced by a
uniform draw of 0..4 with probability ``error``. The draws are a
hash of (seed, the prompt), so a prompt always gets the same reply, as a model at temperature 0
does, whatever the order or concurrency of the requests. Unknown texts get utility 0.

:class:`StandInServer` serves it with real uvicorn on 127.0.0.1 (a thread, a free port) at
``POST /v1/chat/completions``, replying like the real API (``choices[0].message.content``,
``usage.prompt_tokens`` = words of the messages, ``usage.completion_tokens`` = 1). On command
(:meth:`StandInServer.script`) the next requests get 429 (with ``Retry-After``), 500, a slow
reply (to time out), a malformed reply text, a 200 without a reply text, or one without
``usage``. It counts the
requests and checks the bearer key when given one (401 otherwise). The same commands and the
request count are reachable over HTTP (``POST /_standin/script``, ``GET /_standin/stats``),
and ``python -m tests.app.machine.llm_standin --truth truth.json --port 8001`` runs it as a process
(the truth: a JSON object from document text to utility) for a worker in another process.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from labeling.machine.llm_prompts import read_blocks

Messages = list[dict[str, str]]


def graded_passage(user: str) -> str | None:
    """The passage of a graded user message (GRADED_V2's fenced block, or GRADED_V1's),
    None for another prompt."""
    blocks = read_blocks(user)
    if "passage" in blocks:
        return blocks["passage"]
    if "\n\nPassage:\n" not in user or "\n\nGrade how well" not in user:
        return None
    return user.split("\n\nPassage:\n", 1)[1].split("\n\nGrade how well", 1)[0]


def passages(user: str) -> tuple[str, str]:
    """Passages A and B of a pairwise user message (PAIRWISE_V2's fenced blocks, as a model
    reads them, or PAIRWISE_V1's)."""
    blocks = read_blocks(user)
    if "passage_a" in blocks and "passage_b" in blocks:
        return blocks["passage_a"], blocks["passage_b"]
    a = user.split("Passage A:\n", 1)[1].split("\n\nPassage B:\n", 1)[0]
    b = user.split("\n\nPassage B:\n", 1)[1].split("\n\nWhich passage", 1)[0]
    return a, b


@dataclass
class StandInModel:
    """The stand-in's answers (module docstring): pure, one reply per prompt."""

    truth: Mapping[str, float]
    bias: float = 0.0
    error: float = 0.0
    seed: int = 0
    grade_scale: float = 1.0

    def _uniforms(self, messages: Messages) -> tuple[float, float]:
        text = "\x1f".join(m["content"] for m in messages)
        digest = hashlib.blake2b(f"{self.seed}\x1e{text}".encode(), digest_size=16).digest()
        first, second = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big")
        return first / 2.0**64, second / 2.0**64

    def answer(self, messages: Messages) -> str:
        graded = graded_passage(messages[-1]["content"])
        if graded is not None:
            draw, flip = self._uniforms(messages)
            grade = int(self.truth.get(graded, 0.0) * self.grade_scale)
            if flip < self.error:
                grade = int(draw * 5)
            return str(min(4, max(0, grade)))
        a, b = passages(messages[-1]["content"])
        to_first, flip = self._uniforms(messages)
        if to_first < self.bias:
            return "A"
        better_a = self.truth.get(a, 0.0) > self.truth.get(b, 0.0)
        if flip < self.error:
            better_a = not better_a
        return "A" if better_a else "B"

    def ask(self, batch: Sequence[Messages]) -> list[str | None]:
        """The in-process ``ask`` of :class:`labeling.machine.judges.LlmJudge`."""
        return [self.answer(list(m)) for m in batch]


def tokens(messages: Messages) -> int:
    """The stand-in's prompt token count: ⌈characters / 3⌉ of every message (above the
    client's floor of characters / 4, as a real tokenizer's count often is)."""
    return sum(-(-len(m["content"]) // 3) for m in messages)


@dataclass
class StandInServer:
    """:class:`StandInModel` over HTTP (module docstring). Use as a context manager."""

    model: StandInModel
    api_key: str | None = None
    requests: int = 0
    authorizations: list[str | None] = field(default_factory=list)
    dripped: int = 0
    _script: deque[tuple[str, Any]] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, kind: str, times: int = 1, value: Any = None) -> None:
        """The next ``times`` requests get ``kind``: ``"429"`` (``value``: the Retry-After
        header, or None for none), ``"500"``, ``"slow"`` (``value`` seconds before the
        reply), ``"drip"`` (the reply sent one byte every ``value`` seconds; :attr:`dripped`
        counts the bytes sent), ``"huge"`` (a reply text of ``value`` characters),
        ``"malformed"`` (``value``: the reply text), ``"garbage"`` (a 200 whose body is not
        JSON), ``"usage"`` (``value``: the prompt and completion tokens reported, e.g.
        ``0`` or ``-50``), ``"no_content"`` or ``"no_usage"``."""
        with self._lock:
            self._script.extend([(kind, value)] * times)

    def _next_action(self) -> tuple[str, Any] | None:
        with self._lock:
            self.requests += 1
            return self._script.popleft() if self._script else None

    def _drip(self, payload: bytes, every: float) -> StreamingResponse:
        async def body() -> Any:
            for i in range(len(payload)):
                await asyncio.sleep(every)
                self.dripped += 1
                yield payload[i : i + 1]

        return StreamingResponse(body(), media_type="application/json")

    async def _completions(self, request: Request) -> Response:
        auth = request.headers.get("authorization")
        action = self._next_action()
        with self._lock:
            self.authorizations.append(auth)
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
        body = await request.json()
        messages: Messages = body["messages"]
        reply = self.model.answer(messages)
        if action is not None:
            kind, value = action
            if kind == "429":
                headers = {} if value is None else {"Retry-After": str(value)}
                return JSONResponse({"error": "rate"}, status_code=429, headers=headers)
            if kind == "500":
                return JSONResponse({"error": "server"}, status_code=500)
            if kind == "slow":
                await asyncio.sleep(float(value))
            if kind == "malformed":
                reply = str(value)
            if kind == "huge":
                reply = "x" * int(value)
            if kind == "garbage":
                return Response(b"<html>502 Bad Gateway</html>", media_type="text/html")
            if kind == "drip":
                payload = JSONResponse(self._reply(body, messages, reply)).body
                return self._drip(payload, float(value))
            if kind == "usage":
                data = self._reply(body, messages, reply)
                data["usage"] = {"prompt_tokens": int(value), "completion_tokens": int(value)}
                return JSONResponse(data)
            if kind == "no_content":
                return JSONResponse({"id": "x", "choices": [], "usage": {"prompt_tokens": 1}})
            if kind == "no_usage":
                message = {"role": "assistant", "content": reply}
                return JSONResponse({"id": "x", "choices": [{"index": 0, "message": message}]})
        return JSONResponse(self._reply(body, messages, reply))

    def _reply(self, body: dict[str, Any], messages: Messages, reply: str) -> dict[str, Any]:
        """A chat-completions answer with ``reply`` and the stand-in's usage."""
        return {
            "id": f"standin-{self.requests}",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens(messages),
                "completion_tokens": 1,
                "total_tokens": tokens(messages) + 1,
            },
        }

    async def _control(self, request: Request) -> JSONResponse:
        """``POST /_standin/script`` with ``{"kind", "times", "value"}``: :meth:`script` over
        HTTP (for a stand-in in another process)."""
        body = await request.json()
        self.script(str(body["kind"]), int(body.get("times", 1)), body.get("value"))
        return JSONResponse({"scripted": len(self._script)})

    async def _stats(self, _request: Request) -> JSONResponse:
        """``GET /_standin/stats``: the requests received so far."""
        return JSONResponse({"requests": self.requests})

    def app(self) -> Starlette:
        """The ASGI app: the chat-completions route and the two control routes."""
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._completions, methods=["POST"]),
                Route("/_standin/script", self._control, methods=["POST"]),
                Route("/_standin/stats", self._stats, methods=["GET"]),
            ]
        )

    def __enter__(self) -> StandInServer:
        app = self.app()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the stand-in server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()

    @property
    def base_url(self) -> str:
        """The API root to set as ``llm_base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"


def main() -> None:
    """Serve a stand-in in this process until interrupted (module docstring)."""
    import argparse
    import json
    import os

    ap = argparse.ArgumentParser(description="A stand-in OpenAI-compatible chat model.")
    ap.add_argument("--truth", required=True, help="JSON object: document text -> utility")
    ap.add_argument("--port", type=int, default=8001)
    ap.add_argument("--bias", type=float, default=0.0)
    ap.add_argument("--error", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--api-key-env", default=None, help="check this variable's key")
    args = ap.parse_args()
    with open(args.truth, encoding="utf-8") as fh:
        truth = {str(k): float(v) for k, v in json.load(fh).items()}
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    server = StandInServer(StandInModel(truth, args.bias, args.error, args.seed), api_key=key)
    uvicorn.run(server.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
