"""The outbound policy's decisions, and the client that enforces them at connect time.

Addresses other than the test's own loopback listener are judged by the policy alone, with a
resolver the test controls: no request ever leaves for them.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterator

import pytest

from configuration.allowlist import IPAddress, parse_allowlist
from configuration.loading import load_settings
from configuration.settings import SettingsError
from outbound.http import Outbound, ReplyTooLarge
from outbound.policy import OutboundPolicy, OutboundRefused, refusal_rule
from tests.support.listener import Listener, Reply


def _get(outbound: Outbound, url: str, limit: int = 1000) -> tuple[int, bytes]:
    async def fetch() -> tuple[int, bytes]:
        async with outbound.client(limit) as client, outbound.get_following_redirects(client, url) as reply:
            return reply.status_code, await reply.aread()

    return asyncio.run(fetch())


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.170.2", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),  # 6to4 around 127.0.0.1
        ("100.64.0.1", "reserved"),  # carrier-grade NAT
        ("240.0.0.1", "reserved"),
    ],
)
def test_addresses_a_caller_must_not_reach_are_refused_with_the_rule(address: str, rule: str) -> None:
    reason = refusal_rule(ipaddress.ip_address(address))
    assert reason is not None and rule in reason


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert refusal_rule(ipaddress.ip_address(address)) is None


def _resolving(table: dict[str, list[str]], calls: list[str] | None = None) -> OutboundPolicy:
    async def resolver(host: str) -> list[IPAddress]:
        if calls is not None:
            calls.append(host)
        return [ipaddress.ip_address(a) for a in table[host]]

    return OutboundPolicy(resolver=resolver)


@pytest.mark.parametrize(
    ("resolved", "rule"),
    [
        (["169.254.169.254"], "cloud metadata"),
        (["10.0.0.1"], "private"),
        (["::ffff:127.0.0.1"], "loopback"),
        (["93.184.215.14", "10.0.0.1"], "private"),  # one bad answer among good ones is enough
    ],
)
def test_a_name_is_judged_by_every_address_it_resolves_to(resolved: list[str], rule: str) -> None:
    policy = _resolving({"evil.example": resolved})
    with pytest.raises(OutboundRefused) as refused:
        asyncio.run(policy.admit("evil.example", 443))
    assert rule in str(refused.value) and "evil.example" in str(refused.value)
    assert "DA_OUTBOUND_ALLOW" in str(refused.value)


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:7f00:1]"])
def test_numeric_spellings_of_loopback_are_judged_as_loopback_without_a_lookup(host: str) -> None:
    calls: list[str] = []
    with pytest.raises(OutboundRefused, match="loopback"):
        asyncio.run(_resolving({}, calls).admit(host, 80))
    assert calls == []


@pytest.mark.parametrize(
    ("entries", "host", "port", "resolved", "allowed"),
    [
        ("internal.example", "internal.example", 8000, ["10.1.2.3"], True),
        ("INTERNAL.example:8000", "internal.example", 8000, ["10.1.2.3"], True),
        ("internal.example:8000", "internal.example", 8001, ["10.1.2.3"], False),
        ("10.0.0.0/8", "svc.example", 443, ["10.9.9.9"], True),
        ("10.0.0.0/8", "svc.example", 443, ["192.168.0.1"], False),
        ("10.0.0.5:9000", "10.0.0.5", 9000, [], True),
        ("10.0.0.5:9000", "10.0.0.5", 9001, [], False),
        ("[::1]:8080", "::1", 8080, [], True),
        ("[fd00::/8]", "svc.example", 80, ["fd12::1"], True),
        ("fd00::1", "fd00::1", 80, [], True),
        ("169.254.169.254", "169.254.169.254", 80, [], True),
        ("other.example, 10.0.0.0/8", "svc.example", 80, ["172.16.0.1"], False),
    ],
)
def test_the_allowlist_admits_exactly_what_it_names(
    entries: str, host: str, port: int, resolved: list[str], allowed: bool
) -> None:
    async def resolver(name: str) -> list[IPAddress]:
        return [ipaddress.ip_address(a) for a in resolved]

    policy = OutboundPolicy(parse_allowlist(entries), resolver)
    if allowed:
        assert asyncio.run(policy.admit(host, port))
    else:
        with pytest.raises(OutboundRefused):
            asyncio.run(policy.admit(host, port))


@pytest.mark.parametrize("entry", ["http://x", "[::1", "10.0.0.1:http", "host:0", "[::1]x", "a b", "10.0.0.0/33"])
def test_a_bad_allowlist_entry_is_a_settings_error_naming_it(entry: str) -> None:
    with pytest.raises(SettingsError, match="DA_OUTBOUND_ALLOW"):
        load_settings({"DA_OUTBOUND_ALLOW": f"localhost, {entry}"})


@pytest.mark.parametrize(
    ("variable", "value", "complaint"),
    [
        ("DA_TOOL_CALL_DEADLINE", "0", "greater than 0"),
        ("DA_TOOLS_LISTING_DEADLINE", "soon", "number of seconds"),
        ("DA_OUTBOUND_CONNECT_TIMEOUT", "-1", "greater than 0"),
        ("DA_MAX_DOCUMENT_BYTES", "1MB", "whole number"),
        ("DA_MAX_TOOL_REPLY_BYTES", "0", "greater than 0"),
        ("DA_MCP_HEADERS", "{", "not valid JSON"),
        ("DA_MCP_HEADERS", '{"http://x/mcp": "Bearer t"}', "must map endpoint URLs to headers"),
    ],
)
def test_outbound_settings_are_checked_by_name(variable: str, value: str, complaint: str) -> None:
    with pytest.raises(SettingsError, match=variable) as error:
        load_settings({variable: value})
    assert complaint in str(error.value)


def test_outbound_settings_defaults_and_values() -> None:
    defaults = load_settings({})
    assert (defaults.outbound_allow, defaults.tool_call_deadline, defaults.tools_listing_deadline) == ((), 60.0, 10.0)
    assert (defaults.max_document_bytes, defaults.max_tool_reply_bytes) == (1024 * 1024, 8 * 1024 * 1024)
    headers = '{"http://x/mcp": {"Authorization": "Bearer t0ken"}}'
    chosen = load_settings({"DA_OUTBOUND_ALLOW": "mcp.internal, [::1]:8000", "DA_MCP_HEADERS": headers})
    assert chosen.outbound_allow == ("mcp.internal", "[::1]:8000")
    assert chosen.mcp_headers == {"http://x/mcp": {"Authorization": "Bearer t0ken"}}
    assert "t0ken" not in repr(chosen)


def test_the_client_connects_to_the_address_it_checked_and_keeps_the_host_name(listener: Listener) -> None:
    """No second lookup: the name resolves once (through the policy's resolver, which the system
    resolver does not know), and the request reaches the checked address with its own Host."""
    listener.routes["/doc"] = Reply(body=b"hello")
    calls: list[str] = []

    async def resolver(host: str) -> list[IPAddress]:
        calls.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    outbound = Outbound(OutboundPolicy(parse_allowlist("pinned.test"), resolver))
    assert _get(outbound, f"http://pinned.test:{listener.port}/doc") == (200, b"hello")
    assert calls == ["pinned.test"]
    assert listener.hits == ["/doc"]


def test_a_refused_address_gets_no_request_and_a_redirect_to_one_is_not_followed(listener: Listener) -> None:
    other = Listener()
    try:
        listener.routes["/hop"] = Reply(status=302, location=f"{other.url}/secret")
        outbound = Outbound(OutboundPolicy(parse_allowlist(f"localhost:{listener.port}")))
        with pytest.raises(OutboundRefused, match="loopback"):
            _get(outbound, f"{other.url}/direct")
        with pytest.raises(OutboundRefused, match="loopback"):
            _get(outbound, f"{listener.allowed_url}/hop")
        assert listener.hits == ["/hop"]
        assert other.hits == []
    finally:
        other.close()


def test_redirects_are_limited(listener: Listener) -> None:
    listener.routes["/loop"] = Reply(status=302, location="/loop")
    outbound = Outbound(OutboundPolicy(parse_allowlist("localhost")), max_redirects=3)
    with pytest.raises(OutboundRefused, match="more than 3 redirects"):
        _get(outbound, f"{listener.allowed_url}/loop")
    assert len(listener.hits) == 4


def test_a_reply_is_cut_at_its_limit_while_it_streams(listener: Listener) -> None:
    listener.routes["/big"] = Reply(stream_bytes=200 * 1024 * 1024)
    listener.routes["/declared"] = Reply(declared_length=200 * 1024 * 1024)
    outbound = Outbound(OutboundPolicy(parse_allowlist("localhost")))
    with pytest.raises(ReplyTooLarge, match="larger than 1,048,576 bytes"):
        _get(outbound, f"{listener.allowed_url}/big", limit=1024 * 1024)
    assert listener.sent_bytes < 32 * 1024 * 1024
    with pytest.raises(ReplyTooLarge, match="larger than 1,048,576 bytes"):
        _get(outbound, f"{listener.allowed_url}/declared", limit=1024 * 1024)
