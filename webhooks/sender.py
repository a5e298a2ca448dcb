"""Sending one signed webhook through the outbound policy, and judging an endpoint URL before it is kept.

A receiver gets HTTPS unless an operator allowlisted its host (DA_OUTBOUND_ALLOW): a webhook carries a
tenant's data. Its address is judged at create and update, and again when each connection is made
(outbound/http.py). Redirects are not followed (a 3xx is a failed attempt), the whole attempt has a
short deadline, and at most a little of the reply is read, only to show in the delivery log.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import httpx2

from outbound.http import Outbound, ReplyTooLarge
from outbound.policy import ALLOW_SETTING, OutboundRefused

REPLY_SHOWN_BYTES = 512
"""How much of a refusing receiver's reply the delivery log keeps."""
_READ_AT_MOST = 16 * 1024


class EndpointUrlRefused(ValueError):
    """The URL cannot be a webhook endpoint; the message says what would be accepted."""


@dataclass(frozen=True)
class Sent:
    """What one attempt came to: the receiver's status code, or why there is none."""

    status_code: int | None
    error: str | None
    duration_ms: int

    @property
    def accepted(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def _host_and_port(url: str) -> tuple[str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as bad:
        raise EndpointUrlRefused(f"url {url!r} is not a valid URL: {bad}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointUrlRefused(f"url must be an https:// URL with a host name; {url!r} is not one")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80), parts.scheme


async def check_endpoint_url(outbound: Outbound, url: str) -> None:
    """Raise EndpointUrlRefused unless deliveries may go to `url` (a name that does not resolve yet passes:
    each delivery's connection is judged again)."""
    if len(url) > 2048:
        raise EndpointUrlRefused("url is longer than 2048 characters")
    host, port, scheme = _host_and_port(url)
    if scheme == "http" and not outbound.policy.allowlisted(host, port):
        raise EndpointUrlRefused(
            f"url must use https://; plain http:// is accepted only for hosts an operator allows with {ALLOW_SETTING}"
        )
    try:
        await outbound.policy.check_url_host(host, port)
    except OutboundRefused as refused:
        raise EndpointUrlRefused(f"url cannot receive webhooks. {refused}") from None


async def send(outbound: Outbound, url: str, headers: dict[str, str], body: bytes, deadline: float) -> Sent:
    """POST the signed body once; never raises for what the receiver or the network did."""
    started = time.monotonic()

    def sent(status_code: int | None, error: str | None) -> Sent:
        return Sent(status_code, error, int((time.monotonic() - started) * 1000))

    try:
        host, port, scheme = _host_and_port(url)
        if scheme == "http" and not outbound.policy.allowlisted(host, port):
            return sent(None, f"Refused to send to {url}: plain http:// to a host not in {ALLOW_SETTING}")
        bounded = replace(outbound, connect_timeout=deadline, read_timeout=deadline)
        async with asyncio.timeout(deadline), bounded.client(_READ_AT_MOST) as client:
            request = client.build_request("POST", url, content=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                if 200 <= response.status_code < 300:
                    return sent(response.status_code, None)
                reply = await _beginning(response)
                return sent(response.status_code, f"HTTP {response.status_code}" + (f": {reply}" if reply else ""))
            finally:
                await response.aclose()
    except EndpointUrlRefused as refused:
        return sent(None, str(refused))
    except TimeoutError:
        return sent(None, f"No answer within {deadline:g} s")
    except (OutboundRefused, ReplyTooLarge) as refused:
        return sent(None, str(refused))
    except httpx2.TimeoutException:
        return sent(None, f"No answer within {deadline:g} s")
    except (httpx2.HTTPError, OSError) as failed:
        return sent(None, f"{type(failed).__name__}: {failed}" if str(failed) else type(failed).__name__)


async def _beginning(response: httpx2.Response) -> str:
    read = b""
    try:
        async for chunk in response.aiter_bytes():
            read += chunk
            if len(read) >= REPLY_SHOWN_BYTES:
                break
    except (httpx2.HTTPError, ReplyTooLarge):
        pass
    return read[:REPLY_SHOWN_BYTES].decode("utf-8", "replace").strip()
