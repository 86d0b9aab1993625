"""The lexical leg: tokenizer (English, Chinese, mixed) and the incremental, bounded BM25 index."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.lexical import BM25Index, count_cjk, is_cjk, stem, tokenize


class TestTokenizeEnglish:
    def test_lowercases_stems_and_drops_stopwords(self) -> None:
        """Function words go, inflections collapse to one stem."""
        assert tokenize("She was painting the sunsets") == ["paint", "sunset"]
        assert tokenize("paints") == tokenize("painted") == tokenize("painting") == ["paint"]

    def test_possessive_and_contractions(self) -> None:
        """``Caroline's`` indexes as ``caroline``'s stem; ``don't`` leaves nothing."""
        assert tokenize("Caroline's") == tokenize("Caroline")
        assert tokenize("don't") == []

    def test_ids_and_numbers_stay_whole(self) -> None:
        """Episode ids with underscores and numbers are single tokens."""
        assert tokenize("forget ep_1a2b3c please") == ["forget", "ep_1a2b3c", "pleas"]
        assert "2023" in tokenize("in May 2023")

    def test_full_width_is_folded(self) -> None:
        """NFKC: full-width Latin letters and digits match their ASCII forms."""
        assert tokenize("ＡＢＣ１２３") == tokenize("abc123")

    def test_switches(self) -> None:
        assert tokenize("the cats", stopwords=False, stemming=False) == ["the", "cats"]

    @pytest.mark.parametrize(
        ("word", "expected"),
        [("caresses", "caress"), ("ponies", "poni"), ("hopping", "hop"), ("relational", "relat"),
         ("adjustment", "adjust"), ("agreed", "agre"), ("sized", "size"), ("running", "run")],
    )  # fmt: skip
    def test_porter_stemmer(self, word: str, expected: str) -> None:
        assert stem(word) == expected


class TestTokenizeChinese:
    def test_character_bigrams(self) -> None:
        """A run of Han characters becomes overlapping bigrams (no dictionary needed)."""
        assert tokenize("喜欢咖啡") == ["喜欢", "欢咖", "咖啡"]

    def test_single_character_run_is_a_unigram(self) -> None:
        assert tokenize("猫") == ["猫"]

    def test_punctuation_splits_runs(self) -> None:
        assert tokenize("北京，上海") == ["北京", "上海"]

    def test_query_matches_document_by_shared_bigrams(self) -> None:
        doc = set(tokenize("我最喜欢喝咖啡和绿茶"))
        assert {"咖啡", "绿茶"} <= doc


class TestTokenizeMixed:
    def test_mixed_script_runs(self) -> None:
        """Latin and CJK runs are split even without spaces between them."""
        assert tokenize("我用Python写代码") == ["我用", "python", "写代", "代码"]

    def test_japanese_and_korean_are_cjk(self) -> None:
        assert is_cjk("の") and is_cjk("한") and not is_cjk("a")
        assert count_cjk("abc中文ひら") == 4

    def test_empty(self) -> None:
        assert tokenize("") == [] and tokenize("  ,.!") == []


class TestBM25:
    def test_ranks_by_term_match(self) -> None:
        idx = BM25Index()
        idx.add("a", "I love hiking in the mountains")
        idx.add("b", "My cat likes to sleep all day")
        idx.add("c", "We went hiking last weekend near the lake")
        hits = idx.search("hiking mountains", 10)
        assert [h[0] for h in hits] == ["a", "c"]
        assert hits[0][1] > hits[1][1] > 0

    def test_no_shared_term_no_hit(self) -> None:
        idx = BM25Index()
        idx.add("a", "apples and pears")
        assert idx.search("rocket launch", 5) == []

    def test_rare_terms_weigh_more(self) -> None:
        idx = BM25Index()
        for i in range(10):
            idx.add(f"common{i}", "coffee every morning")
        idx.add("rare", "coffee with cardamom")
        assert idx.search("cardamom coffee", 1)[0][0] == "rare"

    def test_chinese_documents(self) -> None:
        idx = BM25Index()
        idx.add("tea", "我喜欢喝绿茶")
        idx.add("coffee", "他每天早上喝咖啡")
        assert idx.search("谁喜欢绿茶？", 1)[0][0] == "tea"

    def test_replace_and_remove(self) -> None:
        """Adding a known id replaces it; removing forgets it everywhere."""
        idx = BM25Index()
        idx.add("x", "old text about boats")
        idx.add("x", "new text about trains")
        assert len(idx) == 1
        assert idx.search("boats", 5) == []
        assert idx.search("trains", 5)[0][0] == "x"
        assert idx.remove("x") is True
        assert idx.remove("x") is False
        assert len(idx) == 0 and idx.search("trains", 5) == []

    def test_bounded_evicts_oldest(self) -> None:
        idx = BM25Index(max_docs=3)
        for i in range(5):
            evicted = idx.add(f"d{i}", f"document number {i} about memory")
        assert evicted == ["d1"]
        assert len(idx) == 3 and idx.ids() == ["d2", "d3", "d4"]
        assert "d0" not in idx and "d4" in idx
        assert {h[0] for h in idx.search("memory", 10)} == {"d2", "d3", "d4"}

    def test_re_adding_refreshes_age(self) -> None:
        idx = BM25Index(max_docs=2)
        idx.add("a", "alpha")
        idx.add("b", "beta")
        idx.add("a", "alpha again")
        idx.add("c", "gamma")
        assert idx.ids() == ["a", "c"]

    def test_scores_of_given_ids(self) -> None:
        idx = BM25Index()
        idx.add("a", "red apples")
        idx.add("b", "green pears")
        got = idx.scores("red apples", ["a", "b", "missing"])
        assert set(got) == {"a", "b"} and got["a"] > 0 and got["b"] == 0.0

    def test_top_k_and_ties_newest_first(self) -> None:
        idx = BM25Index()
        for i in range(5):
            idx.add(f"d{i}", "blue boats")
        assert [h[0] for h in idx.search("boats", 2)] == ["d4", "d3"]
        assert idx.search("boats", 0) == []

    def test_rejects_nonpositive_bound(self) -> None:
        with pytest.raises(ValueError):
            BM25Index(max_docs=0)


_words = st.sampled_from(["apple", "pear", "boat", "train", "咖啡", "绿茶", "memory", "ep_1", "run", "running"])
_ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 6), st.lists(_words, min_size=1, max_size=6)),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_ops, st.lists(_words, min_size=1, max_size=3))
def test_incremental_equals_fresh_build(ops: list[tuple[str, int, list[str]]], query: list[str]) -> None:
    """Any sequence of adds/removes scores like an index built from scratch over the survivors."""
    inc = BM25Index(max_docs=4)
    live: dict[str, str] = {}
    order: list[str] = []
    for op, n, words in ops:
        doc_id = f"d{n}"
        if op == "add":
            inc.add(doc_id, " ".join(words))
            live[doc_id] = " ".join(words)
            order = [d for d in order if d != doc_id] + [doc_id]
            while len(order) > 4:
                live.pop(order.pop(0))
        else:
            inc.remove(doc_id)
            live.pop(doc_id, None)
            order = [d for d in order if d != doc_id]
    fresh = BM25Index(max_docs=4)
    for d in order:
        fresh.add(d, live[d])
    q = " ".join(query)
    assert inc.ids() == fresh.ids()
    got = dict(inc.search(q, 10))
    want = dict(fresh.search(q, 10))
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v)


@settings(max_examples=80, deadline=None)
@given(st.lists(_words, max_size=12))
def test_distinct_terms_counts_the_texts_terms(words: list[str]) -> None:
    """What the ranking's information prior reads from the index is the text's own distinct term
    count (as ``content_terms`` would tokenize it), not the size of a bookkeeping tuple."""
    from ltm.domain.ranking import content_terms

    text = " ".join(words)
    idx = BM25Index()
    idx.add("d", text)
    idx.add("other", "apple pear boat train memory")  # another document changes nothing
    assert idx.distinct_terms("d") == idx.term_count("d") == len(set(tokenize(text))) == content_terms(text)
    assert idx.distinct_terms("missing") is None


def test_distinct_terms_of_a_long_text() -> None:
    idx = BM25Index()
    idx.add("d", "I signed up for a pottery class at the community center on Friday with my sister")
    assert idx.distinct_terms("d") == 7  # sign, pottery, class, community, center, friday, sister
