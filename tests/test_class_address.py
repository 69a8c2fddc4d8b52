"""The address a class's students open (pages/views/address.py): one they can reach from their own machines."""

from __future__ import annotations

import pytest

from loop.text.catalogs import Note
from pages.views.address import (PUBLIC_URL_VARIABLE, SAME_NETWORK, THIS_MACHINE_ONLY, ClassLink, class_link,
                                 is_loopback, listens_beyond_loopback, machine_addresses)

NETWORK = ["127.0.0.1", "fe80::1c2b", "192.168.1.20", "10.0.0.7"]  # as a laptop's interfaces give them


@pytest.mark.parametrize("page, link", [
    ("http://localhost:8501/", "http://192.168.1.20:8501/?class=ABCDEF"),
    ("http://127.0.0.1:8500/?class=ABCDEF&lang=ja", "http://192.168.1.20:8500/?class=ABCDEF"),  # make class
    ("http://[::1]:8501/step_through", "http://192.168.1.20:8501/step_through/?class=ABCDEF"),
    ("http://LOCALHOST.:8501", "http://192.168.1.20:8501/?class=ABCDEF"),
    ("http://0.0.0.0:8501/", "http://192.168.1.20:8501/?class=ABCDEF"),
])
def test_a_teacher_at_a_loopback_address_gives_the_class_this_machines_network_address(page, link):
    found = class_link("ABCDEF", page, None, NETWORK)
    assert found == ClassLink(link, Note(SAME_NETWORK, address="192.168.1.20", variable=PUBLIC_URL_VARIABLE))
    said = found.note.render()
    assert "same network" in said and "192.168.1.20" in said and PUBLIC_URL_VARIABLE in said


def test_an_ipv6_address_is_put_in_brackets():
    assert class_link("ABCDEF", "http://localhost:8501/", None, ["::1", "2001:db8:5::20"]).url == \
        "http://[2001:db8:5::20]:8501/?class=ABCDEF"


@pytest.mark.parametrize("addresses", [[], ["127.0.0.1", "::1", "fe80::1", "169.254.3.4"]])
def test_with_no_address_others_reach_the_page_says_the_link_only_works_here(addresses):
    found = class_link("ABCDEF", "http://localhost:8501/", None, addresses)
    assert found == ClassLink("http://localhost:8501/?class=ABCDEF",
                              Note(THIS_MACHINE_ONLY, variable=PUBLIC_URL_VARIABLE))
    assert "only works on this computer" in found.note.render()


@pytest.mark.parametrize("public", ["https://loopscope.school.example", "https://loopscope.school.example/",
                                    " https://loopscope.school.example/?lang=ja#top "])
def test_the_public_url_setting_is_the_link_wherever_the_teacher_is(public):
    for page in ("http://localhost:8501/", "http://192.168.1.20:8501/", None):
        assert class_link("ABCDEF", page, public, NETWORK) == \
            ClassLink("https://loopscope.school.example/?class=ABCDEF", None)
    assert class_link("ABCDEF", "http://localhost:8501/", "https://school.example/loopscope/").url == \
        "https://school.example/loopscope/?class=ABCDEF"  # behind a proxy's path
    assert class_link("ABCDEF", None, "loopscope.lan:8501").url == "http://loopscope.lan:8501/?class=ABCDEF"


@pytest.mark.parametrize("page, link", [
    ("http://192.168.1.20:8501/", "http://192.168.1.20:8501/?class=ABCDEF"),
    ("https://loopscope.school.example/?class=ABCDEF", "https://loopscope.school.example/?class=ABCDEF"),
    ("", "/?class=ABCDEF"),
    (None, "/?class=ABCDEF"),
])
def test_an_address_students_reach_stays_the_link_as_before(page, link):
    assert class_link("ABCDEF", page, "", NETWORK) == ClassLink(link, None)


def test_loopback_names_and_addresses():
    assert all(map(is_loopback, ["localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0.0.0.0"]))
    assert not any(map(is_loopback, ["192.168.1.20", "loopscope.school.example", "fd00::2", "", None]))


def test_the_server_is_reached_from_elsewhere_unless_it_listens_on_loopback_alone():
    assert listens_beyond_loopback(None, {}) and listens_beyond_loopback("0.0.0.0", {})
    assert listens_beyond_loopback("::", {}) and listens_beyond_loopback("192.168.1.20", {})
    assert not listens_beyond_loopback("127.0.0.1", {}) and not listens_beyond_loopback("localhost", {})
    assert listens_beyond_loopback("127.0.0.1", {"LOOPSCOPE_CLASSROOM": "1"})  # a replica behind the balancer


def test_this_machines_addresses_are_ones_others_can_open():
    for address in machine_addresses():
        assert not is_loopback(address) and not address.startswith(("fe80:", "169.254."))
