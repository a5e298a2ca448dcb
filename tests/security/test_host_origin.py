"""DNS rebinding and cross-site pages: what the API refuses by Host and Origin."""

from __future__ import annotations

import httpx

from tests.support.stack import Stack


def _port(url: str) -> int:
    return httpx.URL(url).port or 80


def test_without_api_keys_only_loopback_host_names_are_served(stack: Stack) -> None:
    url, port = stack.base_url, _port(stack.base_url)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost", f"LOCALHOST:{port}"):
        assert httpx.get(f"{url}/v1/agents", headers={"Host": host}, timeout=60).status_code == 200, host
    # A page on a rebound name reaches the same socket, with its own name in Host.
    for host in (f"rebind.attacker.example:{port}", "rebind.attacker.example", f"127.0.0.1.nip.io:{port}"):
        refused = httpx.post(
            f"{url}/v1/agents",
            headers={"Host": host},
            json={"agent_config": {"model": "x", "instructions": "y"}},
            timeout=60,
        )
        assert refused.status_code == 403, host
        assert "DA_ALLOWED_HOSTS" in refused.json()["detail"]
    # Orchestrators probe liveness by the pod's address; the probe tells a page nothing.
    assert httpx.get(f"{url}/v1/health", headers={"Host": f"10.1.2.3:{port}"}, timeout=60).status_code == 200


def test_cross_site_origins_are_refused_unless_allowed(stack: Stack) -> None:
    url, port = stack.base_url, _port(stack.base_url)
    evil = httpx.get(f"{url}/v1/agents", headers={"Origin": "https://attacker.example"}, timeout=60)
    assert evil.status_code == 403 and "DA_ALLOWED_ORIGINS" in evil.json()["detail"]
    assert httpx.get(f"{url}/v1/agents", headers={"Origin": "null"}, timeout=60).status_code == 403
    # The API's own pages (/docs) send its own origin.
    assert httpx.get(f"{url}/v1/agents", headers={"Origin": f"http://127.0.0.1:{port}"}, timeout=60).status_code == 200

    settings = stack.settings.model_copy(
        update=dict(allowed_origins=("https://console.example",), allowed_hosts=("api.example",))
    )
    with stack.other_api(settings) as other:
        allowed = httpx.get(
            f"{other}/v1/agents", headers={"Origin": "https://console.example", "Host": "api.example"}, timeout=60
        )
        assert allowed.status_code == 200
        assert (
            httpx.get(f"{other}/v1/agents", headers={"Origin": "https://attacker.example"}, timeout=60).status_code
            == 403
        )
        # Configured names replace the loopback default.
        assert httpx.get(f"{other}/v1/agents", timeout=60).status_code == 403


def test_with_api_keys_any_host_name_is_served_but_origins_are_still_checked(stack: Stack) -> None:
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=("host-key-0001",)))) as url:
        auth = {"Authorization": "Bearer host-key-0001"}
        assert httpx.get(f"{url}/v1/agents", headers={**auth, "Host": "api.example.com"}, timeout=60).status_code == 200
        cross = httpx.get(f"{url}/v1/agents", headers={**auth, "Origin": "https://attacker.example"}, timeout=60)
        assert cross.status_code == 403
