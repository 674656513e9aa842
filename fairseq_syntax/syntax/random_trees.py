"""Random dependency trees of a given length: the control that tells syntax from an extra masked layer.

A random tree keeps everything of SG-Net but the parse: same words, same subword grouping, same
number of masked layers. If it scores like the real parse, the syntax was not what helped.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .alignment import align_heads_to_word_starts


def random_word_heads(n: int, rng: np.random.Generator) -> list[int]:
    """CoNLL heads (1-based, 0 = root) of a random tree over ``n`` words.

    The words are put in a uniform random order; the first is the root and each later one takes a
    head drawn uniformly among those before it (a random recursive tree). Head direction and distance
    are independent of the sentence, so trees are non-projective as often as chance makes them.
    """
    if n <= 0:
        raise ValueError(f"a tree needs at least one word, got {n}")
    order = rng.permutation(n)
    heads = [0] * n
    for k in range(1, n):
        heads[order[k]] = int(order[rng.integers(k)]) + 1
    return heads


def randomize_subword_heads(codes: Sequence[int], rng: np.random.Generator, where: str = "sentence") -> list[int]:
    """Subword head codes with the same word grouping as ``codes`` and a random tree over the words."""
    starts = [i for i, c in enumerate(codes) if c > 0]
    return align_heads_to_word_starts(random_word_heads(len(starts), rng), starts, len(codes), where)
