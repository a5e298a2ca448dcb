"""Which addresses an outbound request a caller can steer may reach.

A caller who can name a URL must not make our processes talk to what only they can reach: the
loopback interface (the Temporal server and its UI, the API itself), the private network, link-local
addresses (cloud metadata services live there) and the like. The host is resolved once, every
address it resolves to is checked, and the connection goes to a checked address, so a DNS answer
that changes between check and connect cannot slip through. `DA_OUTBOUND_ALLOW` names the
exceptions an operator wants (a local MCP server, an intranet document store).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

from configuration.allowlist import AllowEntry, IPAddress

Resolver = Callable[[str], Awaitable[list[IPAddress]]]
"""Host name → the addresses it resolves to; injectable so tests can play DNS without traffic."""

ALLOW_SETTING = "DA_OUTBOUND_ALLOW"
_PRECHECK_SECONDS = 10.0

CLOUD_METADATA = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
    )
)


class OutboundRefused(Exception):
    """A request was not sent because the policy refuses its destination; the message names the rule."""


def refusal_rule(address: IPAddress) -> str | None:
    """Why `address` may not be reached without an allowlist entry, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            rule = refusal_rule(embedded)
            return f"{rule} (IPv4 {embedded} inside IPv6)" if rule else None
    if address in CLOUD_METADATA:
        return "a cloud metadata address"
    for flag, rule in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private-network address"),
    ):
        if getattr(address, flag):
            return rule
    if not address.is_global:
        return "a reserved address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address a host names by itself, including the legacy IPv4 forms (`2130706433`, `0x7f.1`,
    `127.1`) that resolvers still accept, so that they are judged as the address they are."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host) and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


async def system_resolver(host: str) -> list[IPAddress]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


class OutboundPolicy:
    def __init__(self, allow: Iterable[AllowEntry] = (), resolver: Resolver = system_resolver) -> None:
        self._allow = tuple(allow)
        self._resolver = resolver

    async def admit(self, host: str, port: int) -> list[IPAddress]:
        """The addresses to connect to for host:port, each one checked; raises OutboundRefused."""
        if any(entry.admits_host(host, port) for entry in self._allow):
            return await self._resolve(host)
        addresses = await self._resolve(host)
        for address in addresses:
            rule = refusal_rule(address)
            if rule is not None and not any(entry.admits_address(address, port) for entry in self._allow):
                shown = host if str(address) == host.strip("[]") else f"{host} ({address})"
                raise OutboundRefused(
                    f"Refused to connect to {shown} port {port}: it is {rule}. "
                    f"An operator can allow it with {ALLOW_SETTING}."
                )
        return addresses

    def allowlisted(self, host: str, port: int) -> bool:
        """Whether an operator named this host, or the address it spells, in DA_OUTBOUND_ALLOW."""
        literal = literal_address(host)
        return any(
            entry.admits_host(host, port) or (literal is not None and entry.admits_address(literal, port))
            for entry in self._allow
        )

    async def check_url_host(self, host: str, port: int) -> None:
        """Judge a URL before it is stored (a toolgroup's endpoint). A name that does not resolve
        (yet, or within a few seconds) passes: every connection is judged again when it is made."""
        try:
            async with asyncio.timeout(_PRECHECK_SECONDS):
                await self.admit(host, port)
        except (OSError, TimeoutError):
            return

    async def _resolve(self, host: str) -> list[IPAddress]:
        literal = literal_address(host)
        if literal is not None:
            return [literal]
        try:
            addresses = await self._resolver(host)
        except socket.gaierror as error:
            raise OSError(f"{host} does not resolve: {error.strerror}") from error
        if not addresses:
            raise OSError(f"{host} does not resolve to any address")
        return addresses
