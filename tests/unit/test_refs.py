"""Short memory references (ltm.domain.refs): the shown form is unique in its scope and reads back
to exactly its own id; anything else names no memory."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from ltm.domain.refs import (
    ACCEPTED_MIN,
    FOLD_MIN_CHARS,
    SHOWN_MIN,
    RefTable,
    fold_repeats,
    full_hex,
    is_short_ref,
    last_line,
    matching,
    repeat_marker,
    short_refs,
)

hex20 = st.text(alphabet="0123456789abcdef", min_size=20, max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(hex20, min_size=1, max_size=60, unique=True), st.data())
def test_every_shown_reference_names_exactly_its_own_row(digits: list[str], data: st.DataObject) -> None:
    # shared prefixes are what makes a reference longer: draw some on purpose
    extra = data.draw(st.lists(st.sampled_from(digits), max_size=10))
    ids = [f"ep_{d}" for d in digits] + [f"ep_{d[:7]}{'f' * 13}" for d in extra if d[7:] != "f" * 13]
    ids = list(dict.fromkeys(ids))
    refs = short_refs(ids, ids)
    for eid, ref in refs.items():
        assert len(ref) >= SHOWN_MIN and eid.startswith("ep_" + ref)
        assert matching(ref, ids) == [eid]
        assert matching("ep_" + ref, ids) == [eid]


def test_a_shared_prefix_lengthens_the_reference_and_only_then() -> None:
    a, b, c = "ep_4f2a1b" + "0" * 14, "ep_4f2a1b" + "1" * 14, "ep_9" + "2" * 19
    refs = short_refs([a, b, c], [a, b, c])
    assert refs[a] == "4f2a1b0" and refs[b] == "4f2a1b1"
    assert refs[c] == "92222"  # control: no neighbour shares a digit, the minimum is shown
    assert matching("4f2a1", [a, b, c]) == [a, b]  # the shorter form names both: refused by the caller


def test_ids_that_are_not_generated_ones_are_shown_whole_and_never_matched_by_a_short_form() -> None:
    odd = ["doc-7", "ep_XYZ", "imported:42", "ep_" + "a" * 19]
    assert short_refs(odd, odd) == {i: i for i in odd}
    assert full_hex("ep_" + "a" * 20) == "a" * 20 and full_hex("ep_" + "a" * 21) is None
    good = "ep_" + uuid.uuid4().hex[:20]
    assert matching(good[3:8], [*odd, good]) == [good]  # control


def test_what_counts_as_a_short_reference() -> None:
    assert is_short_ref("4f2a1") and is_short_ref("ep_4f2a1") and is_short_ref("a" * ACCEPTED_MIN)
    assert not is_short_ref("a" * (ACCEPTED_MIN - 1))  # too short to be meant
    assert not is_short_ref("ep_" + "a" * 20)  # a whole id is looked up as it is
    assert not is_short_ref("4F2A1") and not is_short_ref("ep_4f2a1 ") and not is_short_ref("ghijk")
    assert matching("abc", ["ep_abc" + "0" * 17]) == []  # below the accepted minimum: nothing


@given(st.text(max_size=30))
def test_matching_never_names_an_id_the_text_is_not_a_prefix_of(text: str) -> None:
    ids = ["ep_" + uuid.UUID(int=(i * 0x9E3779B97F4A7C15F39CC0605CEDC835) % 2**128).hex[:20] for i in range(1, 257)]
    for eid in matching(text, ids):
        assert eid[3:].startswith(text.removeprefix("ep_"))
    assert matching(ids[7][3:9], ids) == [ids[7]]  # control: a real prefix names its id


def test_the_table_is_reusable_for_ids_it_does_not_hold() -> None:
    held = ["ep_4f2a1" + "0" * 15]
    table = RefTable(held)
    assert table.short("ep_4f2a1" + "9" * 15) == "4f2a19"  # longer than the held neighbour's prefix


def _unfold(text: str, folded: list[str], refs: list[str], depth: int = 0) -> str:
    """A row's text with each marker replaced by the (read back) last line of the row it names."""
    assert depth < 10
    for j, ref in enumerate(refs):
        marker = repeat_marker(ref)
        if marker in text:
            text = text.replace(marker, _unfold(last_line(folded[j]), folded, refs, depth + 1))
    return text


piece = st.text(alphabet="abc xyz.?\n", min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(piece, min_size=1, max_size=4), st.data())
def test_a_folded_block_reads_back_to_every_rows_whole_text(base: list[str], data: st.DataObject) -> None:
    """Rows built from shared pieces (a turn and the turn that answered it): every marker names a
    row whose text (read back the same way) is exactly what was folded away."""
    texts = [
        "".join(data.draw(st.lists(st.sampled_from(base), min_size=1, max_size=3)))
        for _ in range(data.draw(st.integers(1, 5)))
    ]
    refs = [f"{n:05x}" for n in range(len(texts))]
    folded = fold_repeats(texts, refs)
    assert [_unfold(f, folded, refs) for f in folded] == texts


def test_a_turn_repeated_in_the_next_rows_context_is_kept_once() -> None:
    turn = "Melanie: What did you paint last weekend?"
    answer = f"({turn})\nCaroline: A sunset over the lake."
    other = "Caroline: I also started pottery classes in May."
    folded = fold_repeats([answer, f"(Caroline: Hi Mel!)\n{turn}", other], ["4f2a1", "9c07e", "e5d62"])
    assert folded == ["({=9c07e})\nCaroline: A sunset over the lake.", f"(Caroline: Hi Mel!)\n{turn}", other]
    # controls: an identical copy, and a text under the minimum length, are not folded
    assert fold_repeats([turn, turn], ["a0000", "b0000"]) == [turn, turn]
    short = "Mel: ok"
    assert (
        len(short) < FOLD_MIN_CHARS
        and fold_repeats([f"({short}) fine", short], ["a0000", "b0000"])[0] == f"({short}) fine"
    )
