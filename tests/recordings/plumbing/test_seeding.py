"""Seed derivation: one blake2b over the parts, byte-identical to the five copies it replaced."""

from __future__ import annotations

import hashlib
import random

from finmcp.recordings.plumbing.seeding import derive_seed, digest, hex_token, rng_for, unit_draw


def blake(text: str, size: int) -> bytes:
    """The hash the old copies computed, written out independently of the module under test."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=size).digest()


def test_derive_seed_is_the_worlds_64_bit_hash():
    for seed, parts in [(0, ("fund", "000001")), (3, ("user", 17)), (7, ("navs",)), (0, ())]:
        text = "\x1f".join([str(seed), *map(str, parts)])
        assert derive_seed(seed, *parts) == int.from_bytes(blake(text, 8), "big")
    assert derive_seed(0, "fund", "000001") == 0x00AA3906D0D32196  # pinned: the world depends on it


def test_rng_for_matches_the_world_synth_and_agent_streams():
    expected = random.Random(int.from_bytes(blake("5\x1fsample\x1fs-1\x1f0\x1f2", 8), "big"))
    stream = rng_for(5, "sample", "s-1", 0, 2)
    assert [stream.random() for _ in range(5)] == [expected.random() for _ in range(5)]


def test_unit_draw_is_the_servers_53_bit_uniform():
    value = int.from_bytes(blake("1\x1fGetFundInfo\x1fkey\x1f0", 8), "big") >> 11
    assert unit_draw(1, "GetFundInfo", "key", 0) == (value + 0.5) / float(1 << 53)
    draws = [unit_draw(9, "x", i) for i in range(2000)]
    assert all(0.0 < d < 1.0 for d in draws)
    assert 0.45 < sum(draws) / len(draws) < 0.55


def test_hex_token_is_the_content_url_token():
    assert hex_token(0, "news", 12) == blake("0\x1fnews\x1f12", 12).hex()
    assert len(hex_token(0, "news", 12)) == 24
    assert len(hex_token("a", size=16)) == 32


def test_digest_joins_the_text_of_every_part():
    assert digest(1, "a", 2.5, None, size=4) == blake("1\x1fa\x1f2.5\x1fNone", 4)
    assert digest(1, "a") != digest("1a")  # the separator keeps parts apart
