"""The Spanish conflict reader (ltm/domain/conflict/spanish.py): contradicting, compatible and
unrelated pairs, each exclusion beside a positive control; English keeps reading as before; the
reader never raises on arbitrary Spanish-script text. Examples are dev-style, not held-out rows."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import REPO_ROOT
from benchmarks import conflicts as bench
from ltm.domain.conflict import COMPATIBLE, CONTRADICTING, UNRELATED, parse_claims, relation, spanish, vietnamese
from ltm.domain.conflict.lexicon import prep

PAIRS = REPO_ROOT / "benchmarks" / "data" / "conflict_pairs_conf-latin.jsonl"


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Ahora prefiero Go para el backend.", "Prefiero Python para el backend."),
        ("Me mudé a Berlín el mes pasado.", "Vivo en París."),
        ("Ya no bebo café.", "Bebo café todas las mañanas."),
        ("Me llamo Roberto.", "Mi nombre es Beto Sánchez."),
        ("Tengo 34 años.", "Tengo 33 años."),
        ("Cambiamos a MySQL.", "Usamos Postgres."),
        ("No soy vegetariana.", "Soy vegetariana."),
        ("La reunión diaria se movió a las 10.", "La reunión diaria es a las 9."),
        ("Odio el cilantro.", "Me encanta el cilantro."),
        ("Antes trabajaba en Google.", "Trabajo en Google."),
        ("Prefiero la cerveza al vino.", "Prefiero el vino a la cerveza."),
        ("Estoy divorciado.", "Estoy casado."),
        ("Ya no fumo.", "Fumo mucho."),
        ("Dejé de fumar.", "Fumo un paquete al día."),
    ],
)
def test_contradicting(new: str, old: str) -> None:
    assert relation(new, old).label == CONTRADICTING


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Me gusta el té verde.", "Me gusta el café."),
        ("Tengo un perro.", "Tengo un gato."),
        ("Vivo en Berlín.", "Crecí en Múnich."),
        ("Hablo alemán.", "Hablo inglés."),
        ("Me encanta el jazz.", "Me gusta el jazz."),
        ("Vivo en Bilbao desde 2018.", "Vivo en Bilbao."),
        ("Me gustan el té, el café y el chocolate.", "Me gusta el café."),
    ],
)
def test_compatible(new: str, old: str) -> None:
    assert relation(new, old).label == COMPATIBLE


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Prefiero asientos de ventana.", "Vivo en París."),
        ("Trabajo en Google.", "Tengo dos gatos."),
        ("Me gusta el té.", "Mi cumpleaños es el 3 de marzo."),
        ("La fecha límite es el viernes.", "Tengo 30 años."),
    ],
)
def test_unrelated(new: str, old: str) -> None:
    assert relation(new, old).label == UNRELATED


@pytest.mark.parametrize(
    ("excluded", "control", "old"),
    [
        # another subject / the speaker
        ("Mi hermano vive en Sevilla.", "Vivo en Sevilla.", "Vivo en Valencia."),
        ("Alicia vive en París.", "Vivo en París.", "Vivo en Berlín."),
        # a negated other value / the other value itself
        ("No vivo en Londres.", "Vivo en Londres.", "Vivo en Berlín."),
        # an ended state of another value / of the same value
        ("Antes vivía en Sevilla.", "Antes vivía en Valencia.", "Vivo en Valencia."),
        # liking two of a kind / preferring two of a kind
        ("Me gusta el té.", "Prefiero el té.", "Prefiero el café."),
        # a restatement / a change
        ("Me mudé a Granada en 2019.", "Me mudé a Sevilla en 2019.", "Vivo en Granada."),
        # a city by its Spanish name, stored in English / another city (a speaker who writes in both)
        ("Vivo en Londres.", "Vivo en París.", "I live in London."),
    ],
)
def test_each_exclusion_beside_its_positive_control(excluded: str, control: str, old: str) -> None:
    assert relation(excluded, old).label != CONTRADICTING
    assert relation(control, old).label == CONTRADICTING


def test_the_speaker_is_read_off_the_verb_and_its_clitic() -> None:
    assert parse_claims("Vivo en Sevilla.")[0].subject == "self"
    assert parse_claims("Me gusta el té.")[0].subject == "self"
    assert parse_claims("Usamos Postgres.")[0].subject == "we"
    assert parse_claims("Nuestro equipo usa GitHub.")[0].subject == "we"
    assert parse_claims("Mi hermana vive en Toronto.")[0].subject == "mi hermana"


def test_values_are_read_in_their_english_canonical_form() -> None:
    assert parse_claims("Me gusta el té verde.")[0].value == "green tea"
    assert parse_claims("Me gusta la comida tailandesa.")[0].value == "thai food"
    assert parse_claims("Trabajo como ingeniera de software.")[0].value == "software engineer"
    assert parse_claims("Tengo dos gatos.")[0].attribute == "count:cat"


def test_a_place_name_is_mapped_only_where_a_place_is_meant() -> None:
    assert parse_claims("Vivo en Colonia.")[0].value == "cologne"
    assert parse_claims("Me gusta la colonia.")[0].value == "colonia"  # a scent, not the city


def test_a_leading_no_is_a_negation_unless_a_comma_follows() -> None:
    (neg,) = parse_claims("No vivo en Madrid.")
    assert (neg.attribute, neg.value, neg.positive) == ("location", "madrid", False)
    (filler,) = parse_claims("No, vivo en Madrid.")  # control: "No," is a filler, as in English
    assert (filler.attribute, filler.value, filler.positive) == ("location", "madrid", True)
    (en,) = parse_claims("No, I live in Madrid.")
    assert (en.attribute, en.value, en.positive) == ("location", "madrid", True)


ENGLISH = [
    "I like soy milk.",
    "I live in La Paz.",
    "We use El Capitan on the old Mac.",
    "He has a cat.",
    "I am going to go to Madrid.",
    "No I don't drink coffee.",
    "I moved to Zürich.",  # an accent alone does not make a sentence Spanish
    "My friends come to my café every day.",
]


def test_english_sentences_are_not_read_as_spanish() -> None:
    rows = [json.loads(x) for x in bench.DEFAULT_DATASET.read_text(encoding="utf-8").splitlines() if x.strip()]
    english = [t for r in rows if r["lang"] == "en" for t in (r["new"], r["existing"])]
    assert len(english) > 100
    for text in english + ENGLISH:
        assert not spanish.detects(prep(text)), text
    assert spanish.detects(prep("Uso Vim."))  # control: a Spanish sentence without an accent
    assert spanish.detects(prep("Soy vegetariana."))


def test_english_claims_are_unchanged_by_the_spanish_reader() -> None:
    got = parse_claims("I like soy milk.")
    assert [(c.attribute, c.value) for c in got] == [("affinity", "soy milk")]


def test_vietnamese_letters_are_never_read_as_spanish() -> None:
    assert not spanish.detects("tôi thích cà phê")
    assert vietnamese.READER.detects("tôi thích cà phê")


def test_the_pairs_file_has_both_splits_and_every_label() -> None:
    rows = bench.load(PAIRS)
    assert len({r["id"] for r in rows}) == len(rows)
    for split in ("dev", "heldout"):
        part = [r for r in rows if r["lang"] == "es" and r["split"] == split]
        assert len(part) >= 30
        for label in (CONTRADICTING, COMPATIBLE, UNRELATED):
            assert sum(r["label"] == label for r in part) >= 8


def test_measured_precision_and_recall_hold() -> None:
    """A regression floor; the figures are in benchmarks/README.md."""
    results = bench.run(bench.load(PAIRS))["results"]
    dev, held = results["dev/es"]["per_class"][CONTRADICTING], results["heldout/es"]["per_class"][CONTRADICTING]
    assert dev["precision"] >= 0.95 and dev["recall"] >= 0.95
    assert held["precision"] >= 0.85 and held["recall"] >= 0.7


_SPANISH_WORDS = st.sampled_from(
    "yo no ya me nos se vivo vive usamos prefiero gusta encanta tengo años soy estoy mi nuestro el la los "
    "de a al en con para antes solía dejé de fumar café té perro Madrid y o , . ¿ ? ¡ ! 3 10".split()
)
_SPANISH_CHARS = st.text(alphabet="abcdefghijklmnñopqrstuvwxyzáéíóúüÁÉÍÓÚÑ¿¡,.;:!? 0123456789'", max_size=80)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_SPANISH_CHARS, st.lists(_SPANISH_WORDS, max_size=14).map(" ".join)))
def test_the_reader_never_raises_on_spanish_text(text: str) -> None:
    s = prep(text)
    spanish.detects(s)
    spanish.claims_es(s, "")
    parse_claims(text)
    relation(text, "Vivo en Madrid.")


def test_a_pronoun_is_a_whole_word() -> None:
    """The "te" ending "normalmente" is no pronoun ("you", which read the speaker as another
    subject). Found on a held-out row after the readers were frozen. Control: a real pronoun before
    the verb is still read."""
    assert relation("Normalmente prefiero Go.", "Prefiero Java para el backend.").label == CONTRADICTING
    assert relation("Actualmente prefiero el té.", "Prefiero el café.").label == CONTRADICTING
    assert relation("Ya no me gusta el café", "Me gusta el café").label == CONTRADICTING
