"""A memory's fit to a time question: event time, a time its text names, told just after the window."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.ranking import Candidate, RankSettings, rank
from ltm.domain.timematch import DAY, asks_when, mentions_time, text_window, window_affinity


def ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


NOV = (ts(2023, 11, 9), ts(2023, 11, 16))  # "the week before 16 November 2023"


class TestAffinity:
    def test_event_time_inside(self) -> None:
        assert window_affinity(NOV, ts(2023, 11, 12), "anything") == 1.0

    def test_time_named_in_the_text(self) -> None:
        """Told on 16 Nov about 'last Friday' (10 Nov): inside, although told outside."""
        told = ts(2023, 11, 16, 10)
        assert window_affinity(NOV, told, "I went to a castle last Friday") == 1.0
        assert window_affinity(NOV, told, "I went to a castle", told_after=0.0) == 0.0  # positive control

    def test_told_shortly_after_is_partial(self) -> None:
        assert window_affinity(NOV, ts(2023, 11, 17), "a castle", told_after=0.5) == 0.5
        assert window_affinity(NOV, ts(2023, 12, 30), "a castle", told_after=0.5) == 0.0  # beyond the slack
        assert window_affinity(NOV, ts(2023, 11, 1), "a castle", told_after=0.5) == 0.0  # before is not after

    def test_slack_is_at_least_a_day_at_most_a_month(self) -> None:
        day = (ts(2022, 5, 1), ts(2022, 5, 2))
        assert window_affinity(day, ts(2022, 5, 2, 12), "x") == 0.5
        assert window_affinity(day, ts(2022, 5, 3, 12), "x") == 0.0
        year = (ts(2022, 1, 1), ts(2023, 1, 1))
        assert window_affinity(year, ts(2023, 1, 20), "x") == 0.5
        assert window_affinity(year, ts(2023, 2, 5), "x") == 0.0

    def test_no_time(self) -> None:
        assert window_affinity(NOV, float("nan"), "last Friday") == 0.0

    def test_open_spans_named_in_text_do_not_count(self) -> None:
        assert text_window("that was before 2020", ts(2023, 11, 16)) is None
        assert text_window("that was yesterday", ts(2023, 11, 16)) == (ts(2023, 11, 15), ts(2023, 11, 16))


class TestAsksWhen:
    def test_questions_about_a_time(self) -> None:
        for q in ["When did Melanie paint a sunrise?", "How long ago was her birthday?", "What year did he move?",
                  "他什么时候搬家的", "多久以前"]:  # fmt: skip
            assert asks_when(q), q

    def test_other_questions(self) -> None:
        for q in ["What did Caroline research?", "Where has Melanie camped?", "她喜欢什么", ""]:
            assert not asks_when(q), q

    def test_questions_about_a_time_in_the_seven_languages(self) -> None:
        for q in ["When did I see the dentist?", "我什么时候去看的牙医？", "我什麼時候去看牙醫的？",
                  "いつ歯医者に行きましたか", "Tôi đi nha sĩ khi nào?", "ฉันไปหาหมอฟันเมื่อไร",
                  "¿Cuándo fui al dentista?"]:  # fmt: skip
            assert asks_when(q), q

    def test_heldout_questions_in_the_seven_languages(self) -> None:
        """Written before the rule was run on them (14 / 14 asked, 0 / 14 not, when first run)."""
        asked = ["Since when has Ann lived in Lisbon?", "What year did we meet?", "你是哪一年去的日本？",
                 "他们多久以前认识的？", "你是什麼時候搬家的？", "我們幾號見面？", "いつ引っ越しましたか？",
                 "何年に日本に来ましたか", "Bạn chuyển nhà bao giờ?", "Lúc nào bạn gặp Ann?",
                 "คุณย้ายบ้านเมื่อไหร่", "คุณไปญี่ปุ่นปีไหน", "¿Cuándo te mudaste?", "¿En qué año fuiste a Japón?"]  # fmt: skip
        not_asked = ["Where does Ann live?", "What did I eat for dinner?", "安住在哪里？", "我晚饭吃了什么？",
                     "安住在哪裡？", "我晚餐吃了什麼？", "アンはどこに住んでいますか", "いつもの店はどこですか",
                     "Ann sống ở đâu?", "Tôi đã ăn gì vào bữa tối?", "แอนอาศัยอยู่ที่ไหน", "ฉันกินอะไรเป็นมื้อเย็น",
                     "¿Dónde vive Ann?", "¿Qué cené anoche?"]  # fmt: skip
        assert [q for q in asked if not asks_when(q)] == []
        assert [q for q in not_asked if asks_when(q)] == []

    def test_questions_typed_without_accents(self) -> None:
        for q in ["Toi di nha si khi nao?", "Ban chuyen nha bao gio?", "luc nao ban gap Ann?",
                  "cuando fuiste al dentista?", "¿Cuando te mudaste?", "hace cuanto te mudaste?"]:  # fmt: skip
            assert asks_when(q), q
        for q in ["cuando era nino, que comia?", "Ann song o dau?", "que cene anoche?",
                  "cuando llueve me quedo en casa"]:  # fmt: skip
            assert not asks_when(q), q

    def test_heldout_questions_typed_without_accents(self) -> None:
        """Written after the rule, committed before it was run on them (the first run is in the
        closing note and docs/retrieval.md); never used to change it."""
        asked = ["Ban di Nhat khi nao?", "Toi gap Lan luc nao vay?", "Bao gio ban ve que?",
                 "Ban song o day bao lau roi?", "cuando te casaste?", "¿cuando empezaste a trabajar aqui?",
                 "hace cuanto te mudaste a Lima?", "en que ano naciste?"]  # fmt: skip
        not_asked = ["Ban song o dau?", "Hom qua ban an gi?", "cuando llego a casa siempre ceno",
                     "que comiste ayer?", "Toi luon di ngu som", "donde vives?"]  # fmt: skip
        assert [q for q in asked if not asks_when(q)] == []
        assert [q for q in not_asked if asks_when(q)] == []

    def test_other_questions_in_the_seven_languages(self) -> None:
        for q in ["Who is my dentist?", "我的牙医是谁？", "我的牙醫是誰？", "いつも何を食べますか",
                  "Nha sĩ của tôi là ai?", "หมอฟันของฉันชื่ออะไร", "¿Quién es mi dentista?",
                  "cuando era niño, ¿qué comía?"]:  # fmt: skip
            assert not asks_when(q), q

    def test_mentions_time(self) -> None:
        for t in ["I went there last week", "two days ago", "on Friday", "in 2022", "昨天去了", "3天后", "in July"]:
            assert mentions_time(t), t
        for t in ["I love painting", "年轻人", "this is great", ""]:
            assert not mentions_time(t), t


def _cand(i: str, text: str, event_ts: float) -> Candidate:
    md = {"status": "active", "event_ts": event_ts, "ts": event_ts, "importance": 0.5, "sender_id": "tim"}
    return Candidate(id=i, text=text, metadata=md, vector_sim=0.5, lexical=1.0)


class TestInRanking:
    NOW = ts(2024, 1, 13)
    PLAIN = RankSettings(info_weight=0.0)  # texts of different lengths: only the time rules differ

    def test_text_time_lifts_the_memory_told_after(self) -> None:
        told_after = _cand("a", "I went to a castle in the UK last Friday", ts(2023, 11, 16, 10))
        other = _cand("b", "I went to a castle in the UK, great trip", ts(2023, 12, 20))
        q = "Where was Tim in the week before 16 November 2023?"
        got = [
            c.id for c, _ in rank([other, told_after], query=q, now_ts=self.NOW, speaker_id=None, settings=self.PLAIN)
        ]
        assert got == ["a", "b"]
        off = RankSettings(time_from_text=False, time_told_after=0.0, info_weight=0.0)
        got_off = [c.id for c, _ in rank([other, told_after], query=q, now_ts=self.NOW, speaker_id=None, settings=off)]
        assert got_off == ["b", "a"]  # positive control: without the text's time, newer first on a tie

    def test_when_question_prefers_a_memory_naming_a_time(self) -> None:
        timed = _cand("a", "Tim: I painted that sunrise last year", ts(2023, 5, 1))
        plain = _cand("b", "Tim: I painted that sunrise, look", ts(2023, 6, 1))
        got = [c.id for c, _ in rank([plain, timed], query="When did Tim paint a sunrise?", now_ts=self.NOW,
                                     speaker_id=None, settings=self.PLAIN)]  # fmt: skip
        assert got == ["a", "b"]
        got = [c.id for c, _ in rank([plain, timed], query="What did Tim paint?", now_ts=self.NOW, speaker_id=None,
                                     settings=self.PLAIN)]  # fmt: skip
        assert got == ["b", "a"]  # not a "when" question: no preference, newer first on a tie


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0, max_value=4e9),
    st.floats(min_value=1, max_value=4e8),
    st.one_of(st.floats(min_value=-1e10, max_value=1e10), st.just(float("nan"))),
    st.text(max_size=80),
)
def test_affinity_is_bounded(start: float, length: float, event_ts: float, text: str) -> None:
    got = window_affinity((start, start + length), event_ts, text)
    assert got in (0.0, 0.5, 1.0)
    assert DAY > 0


class TestThroughTheService:
    """The plugin's recall path applies the time rules (real numpy index, in-memory KV)."""

    async def test_told_after_memory_found_for_the_week_before(self) -> None:
        from ltm.adapters.embedders import HashingEmbedder
        from ltm.adapters.numpy_index import NumpyIndex
        from ltm.adapters.sqlite_kv import MemoryKeyValueStore
        from ltm.service import MemoryService
        from tests.support import ADMIN, KB, scope_of

        emb = HashingEmbedder()
        clock = [datetime(2023, 12, 20, tzinfo=UTC)]
        svc = MemoryService(
            kv=MemoryKeyValueStore(), vectors=NumpyIndex(), embedder_for=lambda c, kb: emb, clock=lambda: clock[0]
        )
        await svc.register_kb(KB, {"embedding_model": "hash"})
        scope = await scope_of(svc)
        told = {"content": "Tim: I visited a castle in the UK last Friday", "event_at": "2023-11-16T10:00:00Z"}
        later = {"content": "Tim: I visited a castle in the UK, what a trip", "event_at": "2023-12-19T10:00:00Z"}
        for raw in (told, later):
            await svc.remember(scope, raw, ADMIN)
        clock[0] = datetime(2024, 1, 13, tzinfo=UTC)
        res = await svc.recall(
            scope, "Where was Tim in the week before 16 November 2023?", limit=2, with_profiles=False
        )
        assert [r.episode.content for r in res.episodes][0] == told["content"]
        res = await svc.recall(scope, "Where did Tim visit a castle?", limit=2, with_profiles=False)
        assert len(res.episodes) == 2  # positive control: both are found without a window
