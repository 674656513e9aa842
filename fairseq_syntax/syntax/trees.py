"""Dependency trees as CoNLL head lists: validation, ancestors and tree distances.

Heads are 1-based with 0 for the root, as in CoNLL-U. A line may hold several
sentences (several roots); their trees stay separate.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import torch
# torch is imported inside the tensor functions: validate_heads serves data-prep CLIs that should start at once.


def validate_heads(heads: Sequence[int], where: str = "sentence") -> list[int]:
    """Return ``heads`` as a list of ints, or raise ``ValueError`` naming ``where`` and the token.

    Rejects an empty sentence, a head outside ``0..n``, a token that is its own head,
    a cycle and a sentence without a root. ``where`` should name the file and line.
    """
    n = len(heads)
    if n == 0:
        raise ValueError(f"{where}: empty sentence (no tokens)")
    out = []
    for i, h in enumerate(heads, 1):
        try:
            hv = int(h)
        except (TypeError, ValueError):
            raise ValueError(f"{where}, token {i}: head {h!r} is not an integer") from None
        if hv != h and not isinstance(h, str):
            raise ValueError(f"{where}, token {i}: head {h!r} is not an integer")
        if hv < 0 or hv > n:
            raise ValueError(f"{where}, token {i}: head {hv} out of range 0..{n}")
        if hv == i:
            raise ValueError(f"{where}, token {i}: token is its own head (cycle of length 1)")
        out.append(hv)
    if 0 not in out:
        raise ValueError(f"{where}: no root (no token has head 0)")
    # Walk each head chain once; state 1 = on the current path, 2 = known to reach a root.
    state = [0] * (n + 1)
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = out[node - 1]
        if state[node] == 1:
            cycle = path[path.index(node):]
            raise ValueError(
                f"{where}, token {node}: cycle through tokens {' -> '.join(map(str, cycle + [node]))}"
            )
        for p in path:
            state[p] = 2
    return out


def ancestor_matrix(parent: torch.Tensor) -> torch.Tensor:
    """Ancestors-or-self of every position, for a batch of parent pointers.

    ``parent`` is a [B, T] LongTensor of 0-based positions; roots (and positions
    outside any tree) point at themselves. Returns a [B, T, T] bool tensor whose
    row i is True at i and every ancestor of i. Pointer doubling: ceil(log2 T)
    gathers of [B, T, T], no loop over tokens, and no host sync, so it runs on
    the model's device. Head chains are followed, so non-projective trees are right.
    """
    import torch

    if parent.dim() != 2:
        raise ValueError(f"parent must be [B, T], got shape {tuple(parent.shape)}")
    bsz, tlen = parent.shape
    pos = torch.arange(tlen, device=parent.device)
    anc = pos.view(1, tlen, 1).eq(pos.view(1, 1, tlen)).expand(bsz, tlen, tlen).clone()
    anc.scatter_(2, parent.unsqueeze(-1), True)
    jump = parent
    for _ in range(math.ceil(math.log2(tlen)) if tlen > 2 else 1):
        anc |= anc.gather(1, jump.unsqueeze(-1).expand(bsz, tlen, tlen))
        jump = jump.gather(1, jump)
    return anc


def _parent_from_heads(heads: Sequence[int]) -> torch.Tensor:
    import torch

    h = torch.as_tensor(heads, dtype=torch.long)
    pos = torch.arange(len(h))
    return torch.where(h > 0, h - 1, pos)


def ancestors_mask(heads: Sequence[int], where: str = "sentence") -> torch.Tensor:
    """SDOI mask of one word-level sentence: [n, n] bool, row i True at i and its ancestors.

    ``heads`` are CoNLL heads (1-based, 0 = root); they are validated first.
    """
    heads = validate_heads(heads, where)
    return ancestor_matrix(_parent_from_heads(heads).unsqueeze(0))[0]


def distances_from_ancestors(anc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Tree distances and connectivity [B, T, T] from an ancestors-or-self matrix [B, T, T].

    dist(i, j) = depth(i) + depth(j) - 2 depth(lca(i, j)); the number of common
    ancestors-or-self is depth(lca) + 1, so one batched matrix product finds every LCA.
    ``connected`` is False for pairs in different trees, whose distance is meaningless.
    """
    import torch

    a = anc.to(torch.float32)
    common = a @ a.transpose(-1, -2)
    depth = a.sum(-1) - 1
    dist = depth.unsqueeze(-1) + depth.unsqueeze(-2) - 2 * (common - 1)
    return dist.round().long(), common > 0


def tree_distance(heads: Sequence[int], where: str = "sentence") -> torch.Tensor:
    """Undirected tree distances of one sentence: [n, n] int64.

    Tokens in different trees (a line with several roots) get distance n, larger
    than any distance inside a tree.
    """
    import torch

    heads = validate_heads(heads, where)
    n = len(heads)
    dist, connected = distances_from_ancestors(ancestor_matrix(_parent_from_heads(heads).unsqueeze(0)))
    return torch.where(connected, dist, torch.full_like(dist, n))[0]
