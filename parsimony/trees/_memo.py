"""The memo table of the OSRT search (open addressing over the bitsets of subproblems) and
the bitset operations on equivalence classes."""

from __future__ import annotations

import numpy as np

from .._numba import assign, njit

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_S1 = np.uint64(31)
_S2 = np.uint64(29)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_FIFTY_EIGHT = np.uint64(58)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)


def _debruijn_index():
    table = np.zeros(64, dtype=np.int64)
    for i in range(64):
        table[((1 << i) * 0x03F79D71B4CB0A89 & 0xFFFFFFFFFFFFFFFF) >> 58] = i
    return table


_DEBRUIJN_INDEX = _debruijn_index()


@njit
def _hash(words, d):
    h = np.uint64(d) * _M1 + _ONE
    for i in range(words.shape[0]):
        h ^= words[i]
        h *= _M2
        h ^= h >> _S1
    h *= _M1
    h ^= h >> _S2
    return h


@njit
def _find(keys, depth, words, d):
    """Slot of ``(words, d)`` in the table, or of the empty slot where it would go."""
    mask = np.uint64(depth.shape[0] - 1)
    slot = np.int64(_hash(words, d) & mask)
    nw = words.shape[0]
    while True:
        dd = depth[slot]
        if dd == -1:
            return slot
        if dd == d:
            same = True
            for i in range(nw):
                if keys[slot, i] != words[i]:
                    same = False
                    break
            if same:
                return slot
        slot = (slot + 1) & (depth.shape[0] - 1)


@njit
def rehash(memo, grown):
    """Move every entry of the table ``memo`` into the (empty, larger) table ``grown``."""
    for s in range(memo.depth.shape[0]):
        if memo.depth[s] == -1:
            continue
        t = _find(grown.keys, grown.depth, memo.keys[s], np.int64(memo.depth[s]))  # (as every other call: one compile)
        assign(grown.keys[t], memo.keys[s])
        grown.depth[t] = memo.depth[s]
        grown.lower[t] = memo.lower[s]
        grown.value[t] = memo.value[s]
        grown.feature[t] = memo.feature[s]


@njit
def lookup(memo, words, d):
    """Slot of ``(words, d)`` in the table ``memo``, or -1 when absent."""
    s = _find(memo.keys, memo.depth, words, d)
    if memo.depth[s] == -1:
        return -1
    return s


@njit
def _members(words, out):
    """Write the class indices of a bitset (ascending) into ``out``; return how many."""
    n = 0
    for wi in range(words.shape[0]):
        x = words[wi]
        while x:
            low = x & (~x + _ONE)
            out[n] = wi * 64 + _DEBRUIJN_INDEX[np.int64((low * _DEBRUIJN) >> _FIFTY_EIGHT)]
            n += 1
            x ^= low
    return n


@njit
def _row_in(words, c):
    return (words[c >> 6] >> np.uint64(c & 63)) & _ONE


@njit
def _split_child(words, fbits, j, side, out):
    """Write the support of child ``side`` (0: feature ``j`` is 0, 1: it is 1) into ``out``."""
    for i in range(words.shape[0]):
        if side == 0:
            out[i] = words[i] & ~fbits[j, i]
        else:
            out[i] = words[i] & fbits[j, i]


@njit
def _splits_nothing(words, fbits, j):
    """True when feature ``j`` puts every class of ``words`` on one side."""
    empty0 = True
    empty1 = True
    for i in range(words.shape[0]):
        if words[i] & fbits[j, i] != _ZERO:
            empty1 = False
        if words[i] & ~fbits[j, i] != _ZERO:
            empty0 = False
    return empty0 or empty1


_CHILD_BITS = 21  # a table entry's feature code keeps its split in the low 21 bits


@njit
def pack_splits(j, k0, k1):
    """Feature code of a subproblem solved with its children: split ``j``, children's splits ``k0``, ``k1``.

    The terminal solver's children are not stored, so their splits (-1: leaves) ride along above
    ``_CHILD_BITS`` bits; with both children leaves the code is ``j`` itself.
    """
    if j < 0:
        return j
    return j + ((k0 + 1) << _CHILD_BITS) + ((k1 + 1) << 2 * _CHILD_BITS)


def unpack_splits(code):
    """``(split, false child's split, true child's split)`` of a table entry's feature code
    (children -2: look them up in the table)."""
    code = int(code)
    if code < (1 << _CHILD_BITS):
        return code, -2, -2
    mask = (1 << _CHILD_BITS) - 1
    return code & mask, ((code >> _CHILD_BITS) & mask) - 1, (code >> 2 * _CHILD_BITS) - 1


@njit
def _store_solved(memo, words, d, t, value, j, k0, k1):
    """Store the new subproblem ``(words, d)``, solved by the terminal solver, in the empty slot ``t``."""
    assign(memo.keys[t], words)
    memo.depth[t] = d
    memo.counters[0] += 1
    memo.counters[2] += 1
    memo.lower[t] = value
    memo.value[t] = value
    memo.feature[t] = pack_splits(j, k0, k1)
