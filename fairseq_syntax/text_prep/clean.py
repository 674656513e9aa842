"""Parallel-corpus cleaning as Moses' clean-corpus-n.perl: length bounds and a length ratio."""
from __future__ import annotations

from ..pipeline.atomic import atomic_path


def keep_pair(src: str, tgt: str, min_len: int, max_len: int, ratio: float) -> bool:
    a, b = len(src.split()), len(tgt.split())
    if not (min_len <= a <= max_len and min_len <= b <= max_len):
        return False
    return a / b <= ratio and b / a <= ratio


def clean_parallel(src_in: str, tgt_in: str, src_out: str, tgt_out: str, min_len: int = 1, max_len: int = 250,
                   ratio: float = 1.5) -> tuple[int, int]:
    """Keep the pairs within the bounds; returns (kept, total). Unequal line counts are an error."""
    kept = total = 0
    with atomic_path(src_out) as tmp_src, atomic_path(tgt_out) as tmp_tgt:
        with open(src_in, encoding="utf-8") as fs, open(tgt_in, encoding="utf-8") as ft, \
                open(tmp_src, "w", encoding="utf-8") as os_, open(tmp_tgt, "w", encoding="utf-8") as ot:
            for total, (s, t) in enumerate(zip(fs, ft), 1):
                if keep_pair(s, t, min_len, max_len, ratio):
                    os_.write(s)
                    ot.write(t)
                    kept += 1
            extra_s, extra_t = fs.readline(), ft.readline()
            if extra_s or extra_t:
                longer, shorter = (src_in, tgt_in) if extra_s else (tgt_in, src_in)
                raise ValueError(f"{longer} has more lines than {shorter} (which ends at line {total})")
    return kept, total
