"""Deterministic hashed n-gram features, numpy only (the ``lexical`` detector's featurizer).

One window of text becomes a sparse vector of ``2**bits`` buckets:

- char n-grams (3, 4, 5) over the lowercased UTF-8 bytes with whitespace runs
  collapsed, so indentation and line wrapping do not change the features;
- word unigrams and bigrams over ``[a-z0-9_]+`` tokens of the same bytes.

Hashing is our own polynomial arithmetic on ``uint64`` (wrapping), never
Python's salted ``hash()``, so a bucket is the same in every process, on every
machine, at training and at run time. Values are sublinear counts
(``1 + log(count)``), L2-normalised over the whole vector.
"""

from __future__ import annotations

import re

import numpy as np

CHAR_NS: tuple[int, ...] = (3, 4, 5)
_BASE = np.uint64(0x100000001B3)  # FNV-1 64-bit prime: the polynomial base
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads bits before the top-bits cut
_SEEDS = {n: np.uint64(0x51ED27 * (n + 1)) for n in (*CHAR_NS, 1, 2)}
_SPACE = re.compile(rb"\s+")
_WORD = re.compile(rb"[a-z0-9_]+")


def normalize(text: str) -> bytes:
    """Lowercase, encode as UTF-8 and collapse whitespace runs to one space."""
    return _SPACE.sub(b" ", text.lower().encode("utf-8", "replace"))


def _char_hashes(data: np.ndarray, n: int) -> np.ndarray:
    count = data.size - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    hashes = np.full(count, _SEEDS[n], dtype=np.uint64)
    for k in range(n):
        hashes = hashes * _BASE + data[k : k + count]
    return hashes


def _word_hashes(normalized: bytes) -> tuple[np.ndarray, np.ndarray]:
    words = _WORD.findall(normalized)
    if not words:
        empty = np.empty(0, dtype=np.uint64)
        return empty, empty
    # Each word's FNV-style hash, computed in numpy over the joined bytes: a
    # word's hash is a polynomial over its bytes, so we fold word by word.
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    flat = np.frombuffer(b"".join(words), dtype=np.uint8).astype(np.uint64)
    starts = np.cumsum(lengths) - lengths
    exponent = np.repeat(starts + lengths - 1, lengths) - np.arange(flat.size)
    terms = flat * _powers(int(lengths.max()))[exponent]
    unigrams = np.add.reduceat(terms, starts) * _BASE + _SEEDS[1]
    bigrams = unigrams[:-1] * _MIX + (unigrams[1:] ^ _SEEDS[2])
    return unigrams, bigrams


_POWERS: list[np.ndarray] = [np.ones(1, dtype=np.uint64)]


def _powers(up_to: int) -> np.ndarray:
    """``_BASE ** k`` (mod 2**64) for ``k`` in ``[0, up_to)``, cached and grown on demand."""
    table = _POWERS[0]
    if table.size < up_to:
        size = max(up_to, 2 * table.size)
        table = np.cumprod(np.full(size, _BASE, dtype=np.uint64), dtype=np.uint64)
        table = np.concatenate([np.ones(1, dtype=np.uint64), table[:-1]])
        _POWERS[0] = table
    return table


def _hashes(text: str) -> np.ndarray:
    normalized = normalize(text)
    data = np.frombuffer(normalized, dtype=np.uint8).astype(np.uint64)
    parts = [_char_hashes(data, n) for n in CHAR_NS]
    parts.extend(_word_hashes(normalized))
    return np.concatenate(parts)


def featurize(windows: list[str], bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse features of many windows at once, as COO triplets sorted by row.

    Returns ``(rows, buckets, values)``: the window index, the bucket id and its
    L2-normalised sublinear count ``1 + log(count)``. One sort for the whole
    batch keeps the per-window overhead of a long artifact small.
    """
    hashes = [_hashes(text) for text in windows]
    lengths = np.fromiter((h.size for h in hashes), dtype=np.int64, count=len(hashes))
    if lengths.sum() == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=np.float32)
    buckets = (np.concatenate(hashes) * _MIX) >> np.uint64(64 - bits)
    keys = np.repeat(np.arange(len(windows), dtype=np.uint64), lengths) << np.uint64(bits) | buckets
    unique, counts = np.unique(keys, return_counts=True)
    rows = (unique >> np.uint64(bits)).astype(np.int64)
    values = (1.0 + np.log(counts)).astype(np.float32)
    norms = np.sqrt(np.bincount(rows, weights=values * values, minlength=len(windows)))
    values /= norms[rows].astype(np.float32)
    mask = np.uint64((1 << bits) - 1)
    return rows, (unique & mask).astype(np.int64), values
