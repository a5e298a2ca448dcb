"""The grammar of `DA_OUTBOUND_ALLOW`: the hosts, addresses and ranges outbound requests may reach even when
the outbound policy (outbound/policy.py) would refuse them. Here so that a bad entry fails at start-up."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_HOSTNAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?", re.IGNORECASE)


@dataclass(frozen=True)
class AllowEntry:
    """One `DA_OUTBOUND_ALLOW` entry: a host name, or an address range, optionally on one port only."""

    hostname: str | None
    network: IPNetwork | None
    port: int | None

    def admits_host(self, host: str, port: int) -> bool:
        return self.hostname is not None and self.hostname == host.lower() and self.port in (None, port)

    def admits_address(self, address: IPAddress, port: int) -> bool:
        return (
            self.network is not None
            and address.version == self.network.version
            and address in self.network
            and self.port in (None, port)
        )


def parse_allow_entry(raw: str) -> AllowEntry:
    """`host`, `host:port`, `10.0.0.0/8`, `127.0.0.1:8000`, `[::1]:8000`, `[fd00::/8]` or a bare IPv6 address."""
    text = raw.strip()
    port: int | None = None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"entry {raw!r}: write IPv6 as [address] or [address]:port")
        text, port = inside, _port(rest[1:], raw) if rest else None
    elif text.count(":") == 1:
        text, port_text = text.split(":")
        port = _port(port_text, raw)
    if not text:
        raise ValueError(f"entry {raw!r} names no host")
    try:
        return AllowEntry(hostname=None, network=ipaddress.ip_network(text, strict=False), port=port)
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(text):
        raise ValueError(f"entry {raw!r} is neither a host name, an IP address nor a CIDR range")
    return AllowEntry(hostname=text.lower().rstrip("."), network=None, port=port)


def _port(text: str, raw: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"entry {raw!r}: the port must be a number from 1 to 65535")
    return int(text)


def parse_allowlist(raw: str | Iterable[str]) -> tuple[AllowEntry, ...]:
    """The comma-separated setting (or its entries); raises ValueError naming a bad entry."""
    entries = raw.split(",") if isinstance(raw, str) else raw
    return tuple(parse_allow_entry(entry) for entry in entries if entry.strip())
