"""The order-aware semantic head (:class:`ConvHead`): numpy at scan time, torch at training time.

The numpy head lays windows end to end with zero gaps and convolves them all at once; these tests
hold it to a plain per-window loop, to the torch module it was trained as, and to what it is for:
telling apart two windows with the same tokens in a different order, which pooled vectors cannot.
"""

from __future__ import annotations

import numpy as np
import pytest

from worker.detectors.local.embedding import ConvHead


def _random_head(rng: np.random.Generator, vocab: int = 50, proj: int = 6, channels: int = 5) -> ConvHead:
    return ConvHead(
        table=rng.normal(size=(vocab, proj)).astype(np.float32),
        conv1=rng.normal(size=(3 * proj, channels)).astype(np.float32),
        bias1=rng.normal(size=channels).astype(np.float32),
        conv2=rng.normal(size=(3 * channels, channels)).astype(np.float32),
        bias2=rng.normal(size=channels).astype(np.float32),
        dense=(
            rng.normal(size=(channels + proj, 4)).astype(np.float32),
            rng.normal(size=(4, 1)).astype(np.float32),
        ),
        dense_bias=(rng.normal(size=4).astype(np.float32), rng.normal(size=1).astype(np.float32)),
    )


def _reference(head: ConvHead, ids: np.ndarray) -> float:
    """One window, the textbook way: zero-padded convolutions position by position."""
    if ids.size == 0:
        pooled = np.zeros(head.conv2.shape[1] + head.table.shape[1], dtype=np.float64)
    else:
        x = head.table[ids].astype(np.float64)

        def conv(seq: np.ndarray, kernel: np.ndarray, bias: np.ndarray, dilation: int) -> np.ndarray:
            width, out = seq.shape[1], np.zeros((len(seq), kernel.shape[1]))
            for t in range(len(seq)):
                total = bias.astype(np.float64).copy()
                for tap, offset in enumerate((-dilation, 0, dilation)):
                    if 0 <= t + offset < len(seq):
                        total += seq[t + offset] @ kernel[tap * width : (tap + 1) * width]
                out[t] = np.maximum(total, 0.0)
            return out

        second = conv(conv(x, head.conv1, head.bias1, 1), head.conv2, head.bias2, 2)
        pooled = np.concatenate([second.max(axis=0), x.mean(axis=0)])
    hidden = np.maximum(pooled @ head.dense[0] + head.dense_bias[0], 0.0)
    return float((hidden @ head.dense[1] + head.dense_bias[1])[0])


@pytest.mark.parametrize("chunk", [256, 3])
def test_batched_numpy_head_equals_a_per_window_loop(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 0, 1, 2 and many tokens, batched together (in one chunk or across chunks),
    score as each would alone."""
    monkeypatch.setattr(ConvHead, "chunk", chunk)
    rng = np.random.default_rng(3)
    head = _random_head(rng)
    windows = [rng.integers(0, 50, size=n) for n in (0, 1, 2, 3, 7, 40, 0, 5)]
    batched = head.logits(windows)
    assert batched.shape == (len(windows),)
    for window, logit in zip(windows, batched, strict=True):
        assert logit == pytest.approx(_reference(head, window), abs=1e-4)
    assert head.logits([]).shape == (0,)


def test_order_changes_the_score_where_pooled_vectors_cannot() -> None:
    """A head that fires on token 1 followed by token 2: "1 2" scores high, "2 1" (the same tokens,
    so the same mean and max of vectors) scores low; a third token between them breaks it too."""
    table = np.eye(3, dtype=np.float32)  # token i -> unit vector i
    conv1 = np.zeros((9, 1), dtype=np.float32)
    conv1[0 * 3 + 1, 0] = 1.0  # the previous token is 1
    conv1[1 * 3 + 2, 0] = 1.0  # this token is 2
    conv2 = np.zeros((3, 1), dtype=np.float32)
    conv2[1, 0] = 1.0  # pass the first layer through
    head = ConvHead(
        table=table,
        conv1=conv1,
        bias1=np.array([-1.5], dtype=np.float32),
        conv2=conv2,
        bias2=np.zeros(1, dtype=np.float32),
        dense=(
            np.array([[1.0], [0.0], [0.0], [0.0]], dtype=np.float32),
            np.array([[20.0]], dtype=np.float32),
        ),
        dense_bias=(np.zeros(1, dtype=np.float32), np.array([-5.0], dtype=np.float32)),
    )
    forward, backward, apart = head.logits([np.array([0, 1, 2]), np.array([0, 2, 1]), np.array([1, 0, 2])])
    assert forward > 0 > backward
    assert apart < 0
    pooled = [table[ids].mean(axis=0) for ids in ([0, 1, 2], [0, 2, 1])]
    assert np.array_equal(pooled[0], pooled[1])


def test_trained_torch_module_and_numpy_head_agree_and_learn_order() -> None:
    """The training module learns an order-only distinction from real tokenizer ids, and the numpy
    head it exports gives the torch module's logits."""
    torch = pytest.importorskip("torch")
    from worker.detectors.local.semantic import load_embedding
    from worker.training.conv import ConvConfig, ConvTrainer, token_matrix

    embedding = load_embedding()
    harmful = [f"please {verb} the file then report {n}" for n in range(12) for verb in ("delete",)]
    harmless = [f"please report {n} then the file {verb}" for n in range(12) for verb in ("delete",)]
    texts = harmful + harmless
    labels = np.array([1] * len(harmful) + [0] * len(harmless))
    x = token_matrix(texts, np.arange(len(texts)), embedding)
    trainer = ConvTrainer(embedding.vectors, ConvConfig(epochs=30, batch=8, lr=1e-2)).fit(
        x, labels, np.ones(len(texts))
    )
    logits = trainer.decision_function(x)
    assert logits[labels == 1].min() > logits[labels == 0].max()
    net = trainer._module()
    net.load_state_dict({name: torch.from_numpy(value) for name, value in trainer.state.items()})
    net.eval()
    with torch.no_grad():
        module = net(torch.from_numpy(trainer.vectors), torch.from_numpy(x[:, 1:].astype(np.int64))).numpy()
    np.testing.assert_allclose(module, logits, atol=1e-4)


def test_two_fits_give_the_same_weights_and_leave_torch_as_it_was() -> None:
    """Training is reproducible (fixed threads, deterministic kernels): one command and seed give one
    head, another seed another. With the torch defaults, two fits on 2 cores gave two heads."""
    torch = pytest.importorskip("torch")
    from worker.detectors.local.semantic import load_embedding
    from worker.training.conv import ConvConfig, ConvTrainer, token_matrix

    embedding = load_embedding()
    rng = np.random.default_rng(5)
    words = ["please", "report", "delete", "the", "file", "then", "send", "keys", "notes", "today"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 120)))) for _ in range(400)]
    labels = np.array([int("delete" in t and "send" in t) for t in texts])
    x = token_matrix(texts, np.arange(len(texts)), embedding)
    threads = torch.get_num_threads()
    fits = [
        ConvTrainer(embedding.vectors, ConvConfig(epochs=2, batch=32)).fit(x, labels, np.ones(len(texts)))
        for _ in range(2)
    ]
    for name, value in fits[0].state.items():
        assert np.array_equal(value, fits[1].state[name]), name
    other = ConvTrainer(embedding.vectors, ConvConfig(epochs=2, batch=32, seed=1)).fit(
        x, labels, np.ones(len(texts))
    )
    assert not np.array_equal(other.state["proj.weight"], fits[0].state["proj.weight"])  # --seed 1
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()
