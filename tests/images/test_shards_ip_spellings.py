"""Every spelling of one IP address is one image server, so one shard: the numeric IPv4 forms the
connection accepts ('2130706437', '0x7f000005', '0177.0.0.5', '127.5') and an IPv4-mapped IPv6
address key on the address itself, as the fetch's per-IP politeness does. ('0177.0.0.5' keyed on
'0.5', the registered domain of the name as written.)"""

from __future__ import annotations

import pytest

from crawlers.images.shards import image_shard, ip_host, server_key

SPELLINGS = [
    "http://127.0.0.5/a.png",
    "http://2130706437/a.png",
    "http://0x7f000005/a.png",
    "http://0X7F.0.0.5/a.png",
    "http://0177.0.0.5/a.png",
    "http://127.5/a.png",
    "http://127.0.5/a.png",
    "http://127.0.0.5./a.png",
    "http://[::ffff:127.0.0.5]:8080/a.png",
    "http://user@0x7f.0.0.05:81/a.png",
]


def test_every_spelling_of_one_ipv4_address_is_one_server_and_one_shard():
    assert {server_key(u) for u in SPELLINGS} == {"127.0.0.5"}
    for shards in (2, 3, 4, 7):
        assert len({image_shard(u, shards) for u in SPELLINGS}) == 1


def test_ipv6_spellings_are_one_server():
    assert server_key("http://[::1]/a") == server_key("http://[0:0:0::0001]/a") == "::1"
    assert server_key("http://[2001:DB8::1]/a") == "2001:db8::1"


@pytest.mark.parametrize(
    "name",
    ["1.2.3.4.5", "256.1.1.1", "08", "1.0x100.1", "4294967296", "1e5", "127.0.0.09", "1" * 5000],
)
def test_names_that_are_no_address_are_not_taken_for_one(name):
    assert ip_host(name) is None


def test_names_still_key_on_their_registered_domain():
    assert server_key("http://img1.cdn.example.co.uk/x") == "example.co.uk"
    assert server_key("http://0x7f.example.com/x") == "example.com"
    assert server_key("http://127.0.0.5.example.com/x") == "example.com"
