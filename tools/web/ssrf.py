"""SSRF policy for web_fetch: which hosts and addresses a fetch may reach.

Only globally routable unicast addresses pass. The stdlib's `is_global` is not trusted on its
own (Python 3.11 calls 192.0.0.8, 224.0.0.1 and ::127.0.0.1 global), so the special-purpose
ranges from the IANA registries are listed here, and IPv6 forms that embed an IPv4 address
(mapped, compatible, SIIT, NAT64, 6to4) are judged by the IPv4 address inside.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

ALLOW_HINT = "set tools.web_fetch.allow_private_networks: true to allow it"

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
_METADATA_IPS = {
    ipaddress.ip_address("169.254.169.254"): "cloud metadata endpoint (AWS/GCP/Azure/OCI)",
    ipaddress.ip_address("168.63.129.16"): "cloud metadata endpoint (Azure WireServer)",
    ipaddress.ip_address("100.100.100.200"): "cloud metadata endpoint (Alibaba Cloud)",
    ipaddress.ip_address("fd00:ec2::254"): "cloud metadata endpoint (AWS IPv6)",
}
_V4_BLOCKED: list[tuple[ipaddress.IPv4Network, str]] = [
    (_V4("0.0.0.0/8"), "unspecified ('this network')"),
    (_V4("10.0.0.0/8"), "private network"),
    (_V4("100.64.0.0/10"), "carrier-grade NAT (shared address space)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private network"),
    (_V4("192.0.0.0/24"), "IETF protocol assignment"),
    (_V4("192.0.2.0/24"), "documentation range"),
    (_V4("192.88.99.0/24"), "reserved (6to4 relay)"),
    (_V4("192.168.0.0/16"), "private network"),
    (_V4("198.18.0.0/15"), "benchmarking range"),
    (_V4("198.51.100.0/24"), "documentation range"),
    (_V4("203.0.113.0/24"), "documentation range"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
]
_V6_BLOCKED: list[tuple[ipaddress.IPv6Network, str]] = [
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),
    (_V6("2001::/23"), "IETF protocol assignment (Teredo, ORCHID, …)"),
    (_V6("2001:db8::/32"), "documentation range"),
    (_V6("3fff::/20"), "documentation range"),
    (_V6("5f00::/16"), "segment routing"),
    (_V6("fc00::/7"), "private network (unique local)"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
]
_V6_GLOBAL_UNICAST = _V6("2000::/3")
_NAT64 = _V6("64:ff9b::/96")
_SIIT = _V6("::ffff:0:0:0/96")
_COMPATIBLE = _V6("::/96")
_BLOCKED_NAMES = {
    "localhost": "localhost",
    "metadata": "cloud metadata host",
    "metadata.google.internal": "cloud metadata host (GCP)",
    "metadata.goog": "cloud metadata host (GCP)",
    "instance-data": "cloud metadata host (AWS)",
    "instance-data.ec2.internal": "cloud metadata host (AWS)",
    "metadata.tencentyun.com": "cloud metadata host (Tencent Cloud)",
}
_BLOCKED_SUFFIXES = (".localhost", ".internal", ".local", ".home.arpa")


class BlockedAddress(Exception):
    """The SSRF policy refused a host or one of its addresses."""


def _part(text: str) -> int | None:
    """One component of a legacy IPv4 form: decimal, 0-prefixed octal or 0x hex."""
    try:
        if text[:2].lower() == "0x":
            return int(text[2:] or "0", 16)
        if len(text) > 1 and text.startswith("0"):
            return int(text[1:], 8)
        return int(text, 10) if text.isdigit() else None
    except ValueError:
        return None


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The address inet_aton would read from 127.1, 0x7f.1, 0177.0.0.1 or 2130706433."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or any(not p for p in parts):
        return None
    numbers = [_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    return ipaddress.IPv4Address(value * 256 ** (4 - len(head)) + last)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The IP address a URL host spells in any form libc accepts, else None (a name)."""
    text = host.strip().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return _inet_aton(text)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _SIIT or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def blocked_reason(ip: IPAddress) -> str | None:
    """Why this address is not publicly routable (or is a metadata endpoint), else None."""
    if ip in _METADATA_IPS:
        return _METADATA_IPS[ip]
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            reason = blocked_reason(inner)
            return f"{reason} (IPv4 {inner} inside IPv6)" if reason else None
        for net6, why in _V6_BLOCKED:
            if ip in net6:
                return why
        return None if ip in _V6_GLOBAL_UNICAST else "not a global unicast address"
    for net4, why in _V4_BLOCKED:
        if ip in net4:
            return why
    return None


def check_host(host: str) -> IPAddress | None:
    """Refuse a literal address or a well-known internal name without DNS; return the literal."""
    literal = parse_ip_literal(host)
    if literal is not None:
        reason = blocked_reason(literal)
        if reason:
            raise BlockedAddress(f"{host} is {literal}: {reason}; {ALLOW_HINT}")
        return literal
    name = host.strip().rstrip(".").lower()
    reason = _BLOCKED_NAMES.get(name)
    if reason is None and name.endswith(_BLOCKED_SUFFIXES):
        reason = "an internal-only name"
    if reason:
        raise BlockedAddress(f"{host} is {reason}; {ALLOW_HINT}")
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver returns for host (via loop.getaddrinfo)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def allowed_addresses(
    host: str, port: int, resolver: Resolver, allow_private: bool
) -> list[str]:
    """The addresses to connect to; with the policy on, every resolved one must be public."""
    literal = check_host(host) if not allow_private else parse_ip_literal(host)
    if literal is not None:
        return [str(literal)]
    addresses = await resolver(host, port)
    if not addresses:
        raise OSError(f"{host} did not resolve to any address")
    if not allow_private:
        for text in addresses:
            reason = blocked_reason(ipaddress.ip_address(text))
            if reason:
                raise BlockedAddress(f"{host} resolves to {text}: {reason}; {ALLOW_HINT}")
    return addresses
