"""The conflict guard in every language the product ships, fed through the one write path: a
statement that contradicts a stored one of the same speaker is parked for a person, in each of the
seven languages; the controls (an unrelated statement, the same statement again) are written or
folded as before. A language added to the catalogs without a conflict reader fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltm.domain.conflict.readers import READERS
from ltm.domain.errors import ParkedError
from ltm.i18n import LANGUAGES
from tests.support import ADMIN
from tests.support.review import contents, review_world

# locale -> (stored, contradicting, unrelated)
TABLE: dict[str, tuple[str, str, str]] = {
    "en_US": ("I live in Lisbon.", "I moved to Berlin.", "I like tea."),
    "zh_Hans": ("我住在上海", "我搬到北京了", "我喜欢茶"),
    "zh_Hant": ("我住在台北", "我搬到高雄了", "我喜歡喝茶"),
    "ja_JP": ("東京に住んでいます", "大阪に引っ越しました", "お茶が好きです"),
    "th_TH": ("ฉันอยู่ระยอง", "ฉันย้ายไปอยู่ขอนแก่นแล้ว", "ฉันชอบชา"),
    "es_ES": ("Vivo en Madrid.", "Ahora vivo en Sevilla.", "Me gusta el té."),
    "vi_VN": ("Tôi sống ở Hà Nội.", "Tôi đã chuyển đến Đà Nẵng.", "Tôi thích trà."),
}
# the reader of each locale's text (traditional Chinese is read by the Chinese reader)
READER_OF = {
    "en_US": "en",
    "zh_Hans": "zh",
    "zh_Hant": "zh",
    "ja_JP": "ja",
    "th_TH": "th",
    "es_ES": "es",
    "vi_VN": "vi",
}


def test_every_shipped_language_has_a_row_and_a_reader() -> None:
    assert set(TABLE) == set(LANGUAGES) == set(READER_OF)
    assert {READER_OF[lang] for lang in LANGUAGES} <= {r.lang for r in READERS}


@pytest.mark.parametrize("lang", sorted(TABLE))
async def test_a_contradiction_is_parked_in_every_language(tmp_path: Path, lang: str) -> None:
    stored, contradicting, unrelated = TABLE[lang]
    w = await review_world(tmp_path)
    old, _ = await w.service.remember(w.alice, {"content": stored}, ADMIN)
    await w.service.remember(w.alice, {"content": unrelated}, ADMIN)  # control: written beside it
    before = await contents(w.service, w.alice, None)
    assert sorted(before) == sorted([stored, unrelated])
    with pytest.raises(ParkedError) as exc:
        await w.service.remember(w.alice, {"content": contradicting}, ADMIN)
    assert await contents(w.service, w.alice, None) == before  # nothing written beside the old one
    c = await w.review.get(w.alice, exc.value.params["candidate"])
    assert c.status == "conflict" and [s["id"] for s in c.conflicts_with] == [old.id]


async def test_a_contradiction_typed_without_accents_is_parked(tmp_path: Path) -> None:
    """Vietnamese as many people type it, through the same write path: a changed city is parked,
    against both stored Hue rows; the control (the same fact said again, "van") is not parked (it is
    stored beside the first: the restatement rule does not drop an unmarked "van")."""
    w = await review_world(tmp_path)
    old, _ = await w.service.remember(w.alice, {"content": "toi song o Hue"}, ADMIN)
    again, _ = await w.service.remember(w.alice, {"content": "toi van song o Hue"}, ADMIN)
    with pytest.raises(ParkedError) as exc:
        await w.service.remember(w.alice, {"content": "toi dang song o Da Nang"}, ADMIN)
    assert "toi dang song o Da Nang" not in await contents(w.service, w.alice, None)
    c = await w.review.get(w.alice, exc.value.params["candidate"])
    assert c.status == "conflict" and {s["id"] for s in c.conflicts_with} == {old.id, again.id}
