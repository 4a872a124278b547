"""Cut a corpus into the same byte windows the detectors scan."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from worker.core.views import added_view
from worker.detectors.local.windows import window_spans, window_texts


def explode(
    texts: Sequence[str], window: int, overlap: int, added_only: bool = False
) -> tuple[list[str], np.ndarray]:
    """Every window of every text, and the index of the text that owns each window; with
    ``added_only``, of each diff without its removed lines, as a model with that flag reads it."""
    windows: list[str] = []
    owners: list[int] = []
    for index, text in enumerate(texts):
        data = text.encode("utf-8")
        if added_only:
            data = added_view(data)
        pieces = window_texts(data, window_spans(len(data), window, overlap))
        windows.extend(pieces)
        owners.extend([index] * len(pieces))
    return windows, np.asarray(owners, dtype=np.int64)
