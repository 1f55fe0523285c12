"""One HTTP exchange with an OpenAI-compatible endpoint, bounded in time and in size
(docs/machine-judges.md#the-llm-client), and the masking of endpoint URLs in logs.

* **A total deadline per request.** ``llm_timeout_seconds`` bounds the whole exchange:
  connecting, sending, waiting for the headers and reading the body. httpx's own timeouts are
  per operation (a server that sends one byte every few seconds never trips a read timeout
  of 20 s), so the client's connections go through :class:`DeadlineBackend`, whose every
  connect, read and write is given at most the time left before the request's deadline
  (a thread-local set by :func:`post_json`; each request runs on one thread) and fails with a
  timeout once it has passed.
* **A reply size limit.** At most ``max_bytes`` of the body are read (as sent, and again
  after any gzip/deflate decoding); a longer body is abandoned unread (``oversized``), its
  connection closed. A ``Content-Length`` over the limit is refused before reading.
* **No credentials in logs.** httpx logs every request's full URL at INFO, so a base URL
  holding ``user:password@`` or ``?api_key=…`` would reach the log. :func:`masked_url` drops
  the user info and masks every query value; :class:`UrlMaskingFilter`, installed on the
  ``httpx`` logger by :func:`install_log_masking`, applies it to every URL in a record.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import httpcore
    import httpx

__all__ = [
    "Exchange",
    "install_log_masking",
    "make_http_client",
    "masked_url",
    "post_json",
]

_DEADLINE = threading.local()
#: What a masked secret (a password, a query value) is shown as.
MASK = "***"


def masked_url(url: object) -> str:
    """``url`` without its user info and with every query value replaced by ``***`` (the
    keys stay: ``?api_key=***``); the fragment is dropped. What may be logged or shown of an
    endpoint whose URL could carry a credential."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal goes back into brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, MASK) for k, _ in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class UrlMaskingFilter(logging.Filter):
    """Rewrites a record's URL arguments (httpx's ``URL`` objects, or strings holding
    ``://``) through :func:`masked_url`; keeps every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(_mask_arg(a) for a in args)
        return True


def _mask_arg(arg: object) -> object:
    text = str(arg) if type(arg).__name__ == "URL" or isinstance(arg, str) else None
    if text is None or "://" not in text:
        return arg
    return masked_url(text)


_INSTALLED = threading.Lock()


def install_log_masking() -> None:
    """Put one :class:`UrlMaskingFilter` on the ``httpx`` logger (idempotent)."""
    logger = logging.getLogger("httpx")
    with _INSTALLED:
        if not any(isinstance(f, UrlMaskingFilter) for f in logger.filters):
            logger.addFilter(UrlMaskingFilter())


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The time an operation may take: its own timeout, cut to what remains before the
    current request's deadline; ``error`` once the deadline has passed."""
    at: float | None = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


def _stream_class() -> Callable[[httpcore.NetworkStream], httpcore.NetworkStream]:
    import httpcore

    class DeadlineStream(httpcore.NetworkStream):
        """A connection whose reads and writes end by the request's deadline."""

        def __init__(self, inner: httpcore.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> httpcore.NetworkStream:
            inner = self._inner.start_tls(
                ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)
            )
            return DeadlineStream(inner)

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    return DeadlineStream


def _backend() -> httpcore.NetworkBackend:
    """:class:`DeadlineBackend`: httpcore's synchronous backend with every connection a
    deadline-bounded stream."""
    import httpcore

    stream = _stream_class()

    class DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> httpcore.NetworkStream:
            left = _left(timeout, httpcore.ConnectTimeout)
            return stream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Any = None
        ) -> httpcore.NetworkStream:
            left = _left(timeout, httpcore.ConnectTimeout)
            return stream(self._inner.connect_unix_socket(path, left, socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return DeadlineBackend()


def make_http_client(timeout_seconds: float, max_connections: int) -> httpx.Client:
    """An ``httpx.Client`` whose requests :func:`post_json` bounds by a total deadline (its
    connections over the deadline backend), each operation also bounded by
    ``timeout_seconds``."""
    import httpcore
    import httpx

    transport = httpx.HTTPTransport(limits=httpx.Limits(max_connections=max_connections))
    # httpx takes no network backend, so the transport's connection pool is replaced by one
    # with the same settings over the deadline backend (tests/app/machine/test_llm_client.py's
    # slow-drip test fails if an httpx upgrade bypasses it).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=max_connections,
        network_backend=_backend(),
    )
    install_log_masking()
    return httpx.Client(timeout=httpx.Timeout(timeout_seconds), transport=transport)


@dataclass(frozen=True, slots=True)
class Exchange:
    """What one POST gave: the status (None: no response), the body of a 200 (None
    otherwise, or when ``oversized``), the ``Retry-After`` header, what went wrong
    (``error``, for counters and pages: never a URL or a key) and whether it was the
    deadline (``timed_out``), and the seconds it took."""

    status: int | None
    body: bytes | None
    retry_after: str | None
    error: str | None
    timed_out: bool
    oversized: bool
    seconds: float


def _decoded(raw: bytes, encoding: str, max_bytes: int) -> bytes | None:
    """The body after its ``Content-Encoding`` (identity, gzip, deflate), None when it is
    longer than ``max_bytes`` decoded or cannot be decoded."""
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate"):
        return None
    try:
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib, told by the header
        out = inflater.decompress(raw, max_bytes + 1)
    except zlib.error:
        return None
    return out if len(out) <= max_bytes else None


def _read_limited(response: httpx.Response, max_bytes: int) -> bytes | None:
    """At most ``max_bytes`` of the body (None: longer)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    encoding = response.headers.get("content-encoding", "").strip().lower()
    return _decoded(b"".join(chunks), encoding, max_bytes)


def post_json(
    http: httpx.Client,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    deadline_seconds: float,
    max_bytes: int,
) -> Exchange:
    """POST ``body`` as JSON, the whole exchange within ``deadline_seconds`` and the reply
    read up to ``max_bytes`` (module docstring). Never raises for the endpoint's faults."""
    import httpx

    start = time.monotonic()
    _DEADLINE.at = start + deadline_seconds
    status: int | None = None
    retry_after = error = None
    payload: bytes | None = None
    timed_out = oversized = False
    try:
        with http.stream(
            "POST", url, json=body, headers={**headers, "Accept-Encoding": "gzip, identity"}
        ) as response:
            status = response.status_code
            retry_after = response.headers.get("retry-after")
            if status == 200:
                payload = _read_limited(response, max_bytes)
                if payload is None:
                    oversized = True
                    error = f"reply over {max_bytes} bytes (or not decodable)"
            else:
                error = f"HTTP {status}"
    except httpx.TimeoutException:
        timed_out = True
        status = None
        error = f"timed out: no full reply within {deadline_seconds:g} s"
    except httpx.TransportError as exc:  # no connection, a broken stream
        status = None
        error = f"no reply ({type(exc).__name__})"
    finally:
        _DEADLINE.at = None
    seconds = time.monotonic() - start
    return Exchange(status, payload, retry_after, error, timed_out, oversized, seconds)
