"""The SSRF policy of web_fetch on literal addresses, names and legacy IPv4 forms."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.web.ssrf import (
    BlockedAddress,
    allowed_addresses,
    blocked_reason,
    parse_ip_literal,
    system_resolver,
)


def _resolver(table: dict[str, list[str]]) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise AssertionError(f"unexpected DNS lookup of {host}")
        return table[host]

    return resolve


REFUSED = [
    "127.0.0.1",
    "127.1",
    "0x7f.1",
    "0177.0.0.1",
    "2130706433",
    "0x7f000001",
    "017700000001",
    "127.0.0.1.",
    "localhost",
    "LOCALHOST.",
    "api.localhost",
    "::1",
    "[::1]",
    "0.0.0.0",
    "0",
    "::",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.100.100.200",
    "168.63.129.16",
    "192.0.0.8",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "240.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "::127.0.0.1",
    "::ffff:0:7f00:1",
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "2002:7f00:1::",
    "2001::1",
    "fd00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fe80::1%eth0",
    "ff02::1",
    "metadata.google.internal",
    "metadata",
    "instance-data",
    "printer.local",
    "db.internal",
    "loopback-name.test",
    "mixed-name.test",
    "cgnat-name.test",
]
ALLOWED = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "public-name.test"]
NAMES = {
    "loopback-name.test": ["127.0.0.1"],
    "mixed-name.test": ["93.184.216.34", "10.1.2.3"],
    "cgnat-name.test": ["100.100.1.1"],
    "public-name.test": ["93.184.216.34", "2606:4700:4700::1111"],
}


@pytest.mark.parametrize("host", REFUSED)
async def test_ssrf_table_refused(host: str) -> None:
    with pytest.raises(BlockedAddress, match="allow_private_networks"):
        await allowed_addresses(host, 80, _resolver(NAMES), allow_private=False)


@pytest.mark.parametrize("host", ALLOWED)
async def test_ssrf_table_allowed(host: str) -> None:
    assert await allowed_addresses(host, 80, _resolver(NAMES), allow_private=False)


async def test_allow_private_networks_lets_everything_through() -> None:
    assert await allowed_addresses("0x7f.1", 80, _resolver({}), allow_private=True) == ["127.0.0.1"]
    assert await allowed_addresses("localhost", 80, system_resolver, allow_private=True)


async def test_system_resolver_resolves_localhost_to_loopback() -> None:
    addresses = await system_resolver("localhost", 80)
    assert addresses and all(ipaddress.ip_address(a).is_loopback for a in addresses)
    assert all(blocked_reason(ipaddress.ip_address(a)) == "loopback" for a in addresses)


@given(st.integers(0, 2**32 - 1), st.sampled_from(["dec", "hex", "oct", "short", "int"]))
def test_legacy_ipv4_forms_match_inet_aton(value: int, form: str) -> None:
    octets = list(value.to_bytes(4, "big"))
    text = {
        "dec": ".".join(map(str, octets)),
        "hex": ".".join(hex(o) for o in octets),
        "oct": ".".join(f"0{o:o}" for o in octets),
        "short": f"{octets[0]}.{int.from_bytes(bytes(octets[1:]), 'big')}",
        "int": str(value),
    }[form]
    expected = ipaddress.IPv4Address(socket.inet_aton(text))
    assert parse_ip_literal(text) == expected == ipaddress.IPv4Address(value)
