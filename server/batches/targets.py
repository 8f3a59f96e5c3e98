"""Where a batch's callback may go. A callback is a request the service makes on a client's
word, so it must not become a way into the networks behind the service: only an `http` or
`https` URL whose every address is public (not loopback, private, link-local, unique-local,
unspecified, multicast or reserved), unless the organizer allows its network
(`KJ_CALLBACK_ALLOW_NETWORKS`). Checked twice: the URL as written when the batch is accepted
(`check_url`: a literal address, `localhost`, the service's own host), and every address its
name resolves to when each callback is sent (`resolve`), which then connects to an address it
checked, so a name that changes its answer in between (DNS rebinding) gains nothing."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

MAX_URL_CHARS = 2048
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
# Names that mean this machine whatever a resolver says.
LOCAL_NAMES = ("localhost", "localhost.localdomain")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refused(ValueError):
    """The URL or one of its addresses is not one a callback may go to; says why."""


def networks(allowed: Iterable[str]) -> list[IPNetwork]:
    return [ipaddress.ip_network(network, strict=False) for network in allowed]


def is_public(address: IPAddress) -> bool:
    """Whether an address is on the public internet (an IPv4 address written as IPv6, as
    ::ffff:127.0.0.1, is judged as the IPv4 address)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def check_address(address: IPAddress, allowed: Sequence[IPNetwork]) -> None:
    if is_public(address) or any(address in network for network in allowed):
        return
    raise Refused(
        f"{address} is not a public address (loopback, private, link-local, multicast or "
        "reserved): callbacks go only to public addresses unless the organizer allows the "
        "network (KJ_CALLBACK_ALLOW_NETWORKS)"
    )


def host_and_port(url: str) -> tuple[str, int]:
    """The URL's host (an IPv6 address without its brackets) and port; raises Refused for a
    URL a callback cannot be sent to at all."""
    if len(url) > MAX_URL_CHARS:
        raise Refused(f"a callback URL has at most {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"not a URL: {exc}") from None
    if parts.scheme not in SCHEMES:
        raise Refused("a callback URL starts with http:// or https://")
    if not parts.hostname:
        raise Refused("a callback URL names a host")
    if parts.username is not None or parts.password is not None:
        raise Refused("a callback URL carries no user name or password")
    return parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def check_url(url: str, allowed: Sequence[IPNetwork], own_hosts: Iterable[str]) -> None:
    """Raises Refused for a URL no callback may go to, judged from its text alone (no name is
    looked up while a request waits): not http(s), a literal address that is not public,
    `localhost`, or the service's own host name."""
    host, _ = host_and_port(url)
    name = host.rstrip(".").lower()
    address = literal(host)
    if address is not None:
        check_address(address, allowed)
    elif name in LOCAL_NAMES or name.endswith(".localhost"):
        for loopback in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")):
            try:
                check_address(loopback, allowed)
            except Refused as exc:
                raise Refused(f"{host} is this machine: {exc}") from None
    elif name in {own.rstrip(".").lower() for own in own_hosts if own}:
        raise Refused(f"{host} is this service's own host: a callback cannot go to it")


def resolve(host: str, port: int, allowed: Sequence[IPNetwork]) -> IPAddress:
    """The address to connect to for `host`: every address it resolves to must be one a
    callback may reach (one that may not refuses all: which one a connection would take is
    the resolver's choice). Raises Refused, or OSError when the name does not resolve."""
    address = literal(host)
    if address is not None:
        check_address(address, allowed)
        return address
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in found]
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    for each in addresses:
        try:
            check_address(each, allowed)
        except Refused as exc:
            raise Refused(f"{host} resolves to {each}: {exc}") from None
    return addresses[0]
