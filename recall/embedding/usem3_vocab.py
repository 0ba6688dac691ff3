"""USE-m3's vocabulary in its cache (``usem3_cache``) in a form the daemon reads in milliseconds.

The tokenizer's prefix table (250,952 strings -> piece id + 1) as one dict, restored from its
``marshal`` file, was ~110 ms of the daemon's first answer after a start (the dict built string
by string, ~60 ms of it hashing), and its list of 128,000 pieces ~20 ms more, which tokenizing
with ids never reads. Here:

* ``vocab.bin``: the table's strings, grouped by their first two characters and NUL-separated
  (UTF-8), then their values (int32), then the pieces (NUL-separated UTF-8);
* ``vocab.marshal``: the tokenizer's other state (scalars, the normalizer, the scores), where
  each group starts, and the sizes and CRC-32 of ``vocab.bin``.

``LazyPrefixes`` answers the tokenizer's only use of its table (``.get``) building the group of
the asked string on first use: a question touches a few hundred of the 18,000 groups. ``whole``
builds the plain dict the package holds (the daemon swaps it in after its first answer, so its
questions from then on look up as they always did; every other process at once). The pieces
are read on first use. The same strings and values as the package's own table: a file that
does not match its CRC, or is missing, is not used (the ``marshal`` file is, as before).
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from pathlib import Path
from typing import Any

from recall.privacy.paths import replace_private

VOCAB = "vocab.bin"
INDEX = "vocab.marshal"
VERSION = 1
_SEP = "\0"


class LazyPrefixes:
    """The tokenizer's prefix table, each group of strings (by their first two characters) built
    on first use; ``get`` as ``dict.get``."""

    def __init__(self, text: str, values: array, groups: dict[str, int], chars: array, keys: array) -> None:
        self._text, self._values, self._groups, self._chars, self._keys = text, values, groups, chars, keys
        self._built: dict[str, dict[str, int]] = {}

    def _group(self, head: str) -> dict[str, int]:
        n = self._groups.get(head)
        if n is None:
            group: dict[str, int] = {}
        else:
            words = self._text[self._chars[n]:self._chars[n + 1] - 1].split(_SEP)
            group = dict(zip(words, self._values[self._keys[n]:self._keys[n + 1]].tolist(), strict=True))
        self._built[head] = group  # two threads building the same group build the same dict
        return group

    def get(self, key: str, default: Any = None) -> Any:
        group = self._built.get(key[:2])
        if group is None:
            group = self._group(key[:2])
        return group.get(key, default)

    def __getitem__(self, key: str) -> int:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        return len(self._values)

    def whole(self) -> dict[str, int]:
        """The whole table as one dict, as the package builds it (~80 ms)."""
        return dict(zip(self._text.split(_SEP), self._values.tolist(), strict=True))


def write(folder: Path, tok: Any) -> None:
    """``vocab.bin`` and ``vocab.marshal`` for ``tok`` (the package's tokenizer, its table a dict),
    each written whole or not at all. Nothing when a string holds a NUL (none does in the model)."""
    prefixes: dict[str, int] = tok._prefixes
    pieces: list[str] = tok._pieces
    if any(_SEP in k for k in prefixes) or any(_SEP in p for p in pieces):
        return
    words = sorted(prefixes, key=lambda k: k[:2])  # grouped; stable: the table's order within a group
    heads: list[str] = []
    chars, keys = array("q"), array("q")
    at = 0
    for i, word in enumerate(words):
        if not heads or word[:2] != heads[-1]:
            heads.append(word[:2])
            chars.append(at)
            keys.append(i)
        at += len(word) + 1
    chars.append(at)
    keys.append(len(words))
    blobs = [_SEP.join(words).encode("utf-8"), array("i", [prefixes[w] for w in words]).tobytes(),
             _SEP.join(pieces).encode("utf-8")]
    data = b"".join(blobs)
    state = {k: v for k, v in tok.__dict__.items() if k not in ("_scores", "_normalizer", "_prefixes", "_pieces")}
    index = {"version": VERSION, "tokenizer": state, "normalizer": dict(tok._normalizer.__dict__),
             "scores": (tok._scores.typecode, tok._scores.tobytes()), "heads": _SEP.join(heads),
             "chars": chars.tobytes(), "keys": keys.tobytes(), "sizes": [len(b) for b in blobs],
             "crc": zlib.crc32(data)}
    replace_private(folder / VOCAB, data)  # each whole or not at all, 0600
    replace_private(folder / INDEX, marshal.dumps(index))


def read(folder: Path) -> tuple[dict, LazyPrefixes, bytes] | None:
    """The tokenizer's state (as ``usem3_cache`` restores it, less the table and the pieces), the
    table, and the pieces' bytes; None when the files are missing, of another version or damaged."""
    try:
        index = marshal.loads((folder / INDEX).read_bytes())
        data = (folder / VOCAB).read_bytes()
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(index, dict) or index.get("version") != VERSION or zlib.crc32(data) != index.get("crc"):
        return None
    n_text, n_values, n_pieces = index["sizes"]
    if n_text + n_values + n_pieces != len(data):
        return None
    values = array("i")
    values.frombytes(data[n_text:n_text + n_values])
    chars, keys = array("q"), array("q")
    chars.frombytes(index["chars"])
    keys.frombytes(index["keys"])
    heads = index["heads"].split(_SEP)
    table = LazyPrefixes(data[:n_text].decode("utf-8"), values, dict(zip(heads, range(len(heads)), strict=True)),
                         chars, keys)
    return index, table, data[n_text + n_values:]


class Pieces:
    """The tokenizer's pieces (a list in the package), decoded on first use: tokenizing with ids,
    as recall does, never reads them."""

    def __init__(self, raw: bytes) -> None:
        self._raw: bytes | None = raw
        self._list: list[str] = []

    def _all(self) -> list[str]:
        if self._raw is not None:
            self._list, self._raw = self._raw.decode("utf-8").split(_SEP), None
        return self._list

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Any:
        return iter(self._all())
