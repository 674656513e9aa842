"""Segments of WMT SGML test files (``<seg id="1">text</seg>``), in document order."""
from __future__ import annotations

import re

_SEG = re.compile(r"<seg[^>]*>\s*(.*?)\s*</seg>", re.I)


def read_sgm_segments(path: str) -> list[str]:
    """The text of every ``<seg>``; as fairseq's script does, ’ becomes '."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = _SEG.search(line)
            if m:
                text = m.group(1).replace("\u2019", "'")
                for ent, ch in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
                    text = text.replace(ent, ch)
                out.append(text)
    return out
