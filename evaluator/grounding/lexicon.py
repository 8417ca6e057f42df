"""Fund and strategy names of the seeded world, found in free text (Chinese has no word breaks).

A name is found where the text holds a known name; the longest name wins at a position, and a share
class letter right after it (``…混合A``) is part of the name as written. The world's lexicon is built
once per seed (about 3,300 names) and cached.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

_CLASS_LETTERS = "ABCDEFHI"


class NameLexicon:
    """Names -> entity code, scanned by their first two characters."""

    def __init__(self, names: Iterable[tuple[str, str]] = ()) -> None:
        self.code_of: dict[str, str] = {}
        self._by_head: dict[str, list[str]] = {}
        for name, code in names:
            self.add(name, code)

    def add(self, name: str, code: str) -> None:
        """Know ``name`` as the entity ``code`` (names shorter than 3 characters are too common to find)."""
        name = name.strip()
        if len(name) < 3 or name in self.code_of:
            return
        self.code_of[name] = code
        bucket = self._by_head.setdefault(name[:2], [])
        bucket.append(name)
        bucket.sort(key=len, reverse=True)

    def __len__(self) -> int:
        return len(self.code_of)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, name as written) of every known name in ``text``, leftmost-longest, no overlaps."""
        out: list[tuple[int, int, str]] = []
        by_head = self._by_head
        i, n = 0, len(text)
        while i < n - 2:
            bucket = by_head.get(text[i : i + 2])
            if bucket is not None:
                for name in bucket:
                    if text.startswith(name, i):
                        end = i + len(name)
                        after = text[end + 1 : end + 2]
                        if (
                            end < n
                            and text[end] in _CLASS_LETTERS
                            and not (after.isascii() and after.isalnum())
                        ):
                            end += 1  # the share class as written (a class letter not starting a word)
                        out.append((i, end, text[i:end]))
                        i = end
                        break
                else:
                    i += 1
                continue
            i += 1
        return out

    def resolve(self, name: str) -> str | None:
        """The code of a name as written (its class letter included or stripped), or None."""
        code = self.code_of.get(name)
        if code is None and name[-1:] in _CLASS_LETTERS:
            code = self.code_of.get(name[:-1])
        return code


@lru_cache(maxsize=4)
def world_lexicon(seed: int) -> NameLexicon:
    """Every fund (short and full name) and strategy name of the world of ``seed``."""
    world = world_for(seed)
    lex = NameLexicon()
    for code, stub in world.fund_universe().items():
        lex.add(stub.name, code)
        lex.add(stub.full_name, code)
    for code in world.strategy_codes():
        strategy = world.strategy(code)
        if strategy is not None:
            lex.add(strategy.name, code)
    return lex


@lru_cache(maxsize=4)
def world_for(seed: int) -> Any:
    """The seeded world (``server.world.World``) the checker compares against, one per seed."""
    from finmcp.server.world.world import World

    return World(seed)
