"""HTTP clients whose every connection obeys the outbound policy.

The check happens where the socket is opened: a network backend resolves the host once, has the
policy judge every address, and connects to a judged address. TLS still verifies, and SNI still
names, the host of the URL, because the connection layer hands the original host name to
`start_tls`; the Host header comes from the URL as usual. Each redirect hop opens its own
connection, so it is judged like the first. Replies are counted as they stream in and cut at
the limit: a large reply is never held whole in memory.

The clients are `httpx2`'s, the HTTP stack the `mcp` SDK speaks, so documents and MCP share one
implementation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import httpcore2
import httpx2

from configuration.allowlist import parse_allowlist
from configuration.settings import Settings
from outbound.policy import OutboundPolicy, OutboundRefused


class ReplyTooLarge(Exception):
    """A reply grew past its limit while streaming in; it was abandoned there."""


class PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses the policy admitted for the host being connected to."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await self._policy.admit(host, port)
        except TimeoutError as error:
            raise httpcore2.ConnectTimeout(f"resolving {host} took longer than {timeout} s") from error
        except OSError as error:
            raise httpcore2.ConnectError(str(error)) from error
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2's interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise OutboundRefused(f"Refused to connect to the Unix socket {path}: outbound requests use TCP only.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _LimitedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, url: httpx2.URL, incidents: list[Exception]) -> None:
        self._inner = inner
        self._limit = limit
        self._url = url
        self._incidents = incidents

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._inner:
            received += len(chunk)
            if received > self._limit:
                raise _record(self._incidents, ReplyTooLarge(_too_large(self._url, self._limit)))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _too_large(url: httpx2.URL, limit: int) -> str:
    return f"The reply from {url.copy_with(query=None, fragment=None)} is larger than {limit:,} bytes"


def _record(incidents: list[Exception], error: Exception) -> Exception:
    incidents.append(error)
    return error


class GuardedTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport on the pinned backend, without proxies from the environment (a proxy
    would connect for us, past the policy), and with replies limited to `max_reply_bytes`.

    Refusals and oversized replies are also appended to `incidents`, so a caller whose library
    wraps or replaces the exception (the MCP SDK does) can still tell the user why.
    """

    def __init__(self, policy: OutboundPolicy, max_reply_bytes: int, incidents: list[Exception]) -> None:
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        # httpx2's transport takes no network backend; its pool is swapped for one on ours.
        self._inner._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False), network_backend=PinnedBackend(policy)
        )
        self._limit = max_reply_bytes
        self.incidents = incidents

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except OutboundRefused as refused:
            raise _record(self.incidents, refused) from None
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            await response.aclose()
            raise _record(self.incidents, ReplyTooLarge(_too_large(request.url, self._limit)))
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_LimitedStream(response.stream, self._limit, request.url, self.incidents),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(frozen=True)
class Outbound:
    """The policy with the timeouts and redirect limit every outbound client uses."""

    policy: OutboundPolicy
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_redirects: int = 5

    def client(
        self,
        max_reply_bytes: int,
        headers: dict[str, str] | None = None,
        incidents: list[Exception] | None = None,
    ) -> httpx2.AsyncClient:
        """A client that follows no redirects by itself (see `get_following_redirects`)."""
        transport = GuardedTransport(self.policy, max_reply_bytes, [] if incidents is None else incidents)
        return httpx2.AsyncClient(
            transport=transport,
            timeout=httpx2.Timeout(self.read_timeout, connect=self.connect_timeout),
            headers=headers,
            trust_env=False,
            follow_redirects=False,
        )

    @asynccontextmanager
    async def get_following_redirects(self, client: httpx2.AsyncClient, url: str) -> AsyncIterator[httpx2.Response]:
        """GET `url`, following at most `max_redirects` redirects, each to http(s) and each hop's
        connection judged by the policy; yields the final response unread (stream it)."""
        target = httpx2.URL(url)
        for _ in range(self.max_redirects + 1):
            response = await client.send(client.build_request("GET", target), stream=True)
            if not response.has_redirect_location:
                try:
                    yield response
                finally:
                    await response.aclose()
                return
            await response.aclose()
            target = response.url.join(response.headers["location"])
            if target.scheme not in ("http", "https"):
                raise OutboundRefused(f"Refused to follow a redirect from {url} to a {target.scheme}: URL")
        raise OutboundRefused(f"Refused to follow more than {self.max_redirects} redirects from {url}")


def outbound_from(settings: Settings) -> Outbound:
    return Outbound(
        policy=OutboundPolicy(parse_allowlist(settings.outbound_allow)),
        connect_timeout=settings.outbound_connect_timeout,
        read_timeout=settings.outbound_read_timeout,
    )
