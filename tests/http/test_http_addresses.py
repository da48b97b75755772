"""Loopback and the Host names a server answers to (cpersona.http.addresses)."""

from __future__ import annotations

from cpersona.http.addresses import LOOPBACK_NAMES, host_form, is_loopback, server_names


def test_loopback_addresses_and_names() -> None:
    for host in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost", "LOCALHOST", " localhost "):
        assert is_loopback(host), host
    for host in (
        "0.0.0.0",
        "::",
        "",
        None,
        "10.0.0.2",
        "192.168.1.5",
        "example.com",
        "[fe80::1]",
        "localhost.evil",
    ):
        assert not is_loopback(host), host


def test_ipv6_literals_are_bracketed_once() -> None:
    assert host_form("::1") == host_form("[::1]") == "[::1]"
    assert host_form("10.0.0.2") == "10.0.0.2" and host_form(" memory.lan ") == "memory.lan"


def test_server_names_add_the_bound_host_unless_it_is_every_interface() -> None:
    assert server_names("127.0.0.1") == list(LOOPBACK_NAMES)
    for anywhere in ("0.0.0.0", "::", "[::]", ""):
        assert server_names(anywhere) == list(LOOPBACK_NAMES), anywhere
    assert server_names("10.0.0.2") == [*LOOPBACK_NAMES, "10.0.0.2"]
    assert server_names("fd00::5") == server_names("[fd00::5]") == [*LOOPBACK_NAMES, "[fd00::5]"]
