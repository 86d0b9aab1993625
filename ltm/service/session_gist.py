"""The session gist of one query, read from the scope's recall index (no I/O, no host call).

:mod:`ltm.domain.gist` scores each session of the scope as one unit; this module reads what that
needs from the scope's in-process :class:`~.scope_index.ScopeIndex`: which held rows the query's
filter lets the reader see, their sessions (event time, gaps of at most ``gap_s``), each
session's mean cosine to the query and its BM25 as one document.

Only rows that pass the query's whole filter count (audience, validity, sender): a row the reader
cannot see never moves the ranking of one it can. What does not change between queries is kept
per index version (a few integers per row, for at most ``_CACHED_ROWS`` rows over all scopes): the
rows passing the filter's non-numeric conditions, and for the last set of rows that also passed
its numeric ones (validity, event range) their sessions and per-session lengths. Each query then
reads the similarities the vector leg's scan computed (or scans the readable rows' vectors itself
when it has none) and the postings of the query's terms (as the lexical leg does).
"""

from __future__ import annotations

import json
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..domain import gist
from ..domain.filters import filter_conditions, matches_conditions
from ..domain.lexical import tokenize
from .row_codec import NUMERIC
from .scope_index import ScopeIndex

__all__ = ["read_sessions", "session_labels"]

_CACHED_ROWS = 500_000  # rows over all scopes whose session tables are kept (about 16 bytes each)
_OPS = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}


@dataclass
class _Tables:
    """The sessions of the rows one filter selects (aligned arrays, rows sorted by session)."""

    mask_key: bytes
    slots: np.ndarray  # the rows the filter selects
    labels: np.ndarray  # their sessions (aligned with ``slots``)
    label_of_slot: np.ndarray  # slot -> session label, -1 for a row the filter keeps out
    counts: np.ndarray  # session -> rows
    lengths: np.ndarray  # session -> summed BM25 document lengths


@dataclass
class _Entry:
    ref: weakref.ReferenceType[ScopeIndex]
    version: int
    rest_key: str
    base: np.ndarray  # slots passing the non-numeric conditions, with a vector
    tables: _Tables | None = None


_cache: OrderedDict[int, _Entry] = OrderedDict()


def _split(where: dict[str, Any]) -> tuple[list[tuple[str, str, Any]], list[tuple[str, str, Any]]]:
    """The filter's numeric range conditions (evaluated on the index's columns) and the rest."""
    numeric, rest = [], []
    for fname, op, val in filter_conditions(where):
        if fname in NUMERIC and op in _OPS and isinstance(val, (int, float)) and not isinstance(val, bool):
            numeric.append((fname, op, val))
        else:
            rest.append((fname, op, val))
    return numeric, rest


def _base_slots(idx: ScopeIndex, rest: list[tuple[str, str, Any]]) -> np.ndarray:
    """Live slots with a vector whose row passes the non-numeric conditions. The scope's own key
    and the active status hold for every row of a scope index; a sender condition reads the
    sender column; anything else (audience, ids, tags) reads each row's metadata."""
    n = len(idx.ids)
    live = np.fromiter((rid is not None for rid in idx.ids), dtype=bool, count=n) & idx.has_vec[:n]
    per_row: list[tuple[str, str, Any]] = []
    for fname, op, val in rest:
        if fname == "user_key" and op == "$eq" and val == idx.user_key and idx.user_key:
            continue
        only_active = (op == "$eq" and val == "active") or (op == "$in" and list(val) == ["active"])
        if fname == "status" and idx.only_active and only_active:
            continue
        if fname == "sender_id" and op == "$eq":
            live &= np.fromiter((s is not None and s == val for s in idx.senders[:n]), dtype=bool, count=n)
            continue
        per_row.append((fname, op, val))
    if per_row:
        for i in np.flatnonzero(live):
            md = idx.metadata(idx.ids[int(i)] or "")
            if md is None or not matches_conditions(md, per_row):
                live[i] = False
    return np.flatnonzero(live).astype(np.int32)


def _entry(idx: ScopeIndex, rest: list[tuple[str, str, Any]]) -> _Entry:
    key = id(idx)
    rest_key = json.dumps(rest, sort_keys=True, default=str)
    got = _cache.get(key)
    if got is None or got.ref() is not idx or got.version != idx.version or got.rest_key != rest_key:
        got = _Entry(weakref.ref(idx), idx.version, rest_key, _base_slots(idx, rest))
        _cache[key] = got
    _cache.move_to_end(key)
    while len(_cache) > 1 and sum(e.base.size for e in _cache.values()) > _CACHED_ROWS:
        _cache.popitem(last=False)
    return got


def session_labels(times: np.ndarray, gap_s: float) -> np.ndarray:
    """:func:`ltm.domain.gist.sessions` over an array (the same labels, in numpy)."""
    n = times.size
    labels = np.empty(n, dtype=np.int32)
    finite = np.isfinite(times)
    idx = np.flatnonzero(finite)
    order = idx[np.argsort(times[idx], kind="stable")]
    if order.size:
        starts = np.r_[True, np.diff(times[order]) > gap_s]
        labels[order] = np.cumsum(starts) - 1
    timed = int(labels[order].max()) + 1 if order.size else 0
    untimed = np.flatnonzero(~finite)
    labels[untimed] = timed + np.arange(untimed.size, dtype=np.int32)
    return labels


def _tables(idx: ScopeIndex, entry: _Entry, numeric: list[tuple[str, str, Any]], gap_s: float) -> _Tables:
    slots = entry.base
    if numeric and slots.size:
        keep = np.ones(slots.size, dtype=bool)
        for fname, op, val in numeric:
            col = idx.numeric[slots, NUMERIC.index(fname)]
            with np.errstate(invalid="ignore"):
                keep &= _OPS[op](col, val)
        slots = slots[keep]
    mask_key = slots.tobytes()
    if entry.tables is not None and entry.tables.mask_key == mask_key:
        return entry.tables
    entry.tables = None
    event = idx.numeric[slots, NUMERIC.index("event_ts")]
    stored = idx.numeric[slots, NUMERIC.index("ts")]
    times = np.where(np.isfinite(event), event, stored)
    labels = session_labels(times, gap_s)
    n_sessions = int(labels.max()) + 1 if labels.size else 0
    label_of_slot = np.full(len(idx.ids), -1, dtype=np.int32)
    label_of_slot[slots] = labels
    counts = np.bincount(labels, minlength=n_sessions).astype(np.float64)
    doc_len = np.fromiter(
        (idx.bm25.doc_length(idx.ids[int(i)] or "") for i in slots), dtype=np.float64, count=slots.size
    )
    lengths = np.bincount(labels, weights=doc_len, minlength=n_sessions)
    entry.tables = _Tables(mask_key, slots, labels, label_of_slot, counts, lengths)
    return entry.tables


def read_sessions(
    idx: ScopeIndex,
    query: str,
    query_vector: Sequence[float],
    where: dict[str, Any],
    candidate_ids: Sequence[str],
    *,
    gap_s: float,
    scan: tuple[np.ndarray, np.ndarray] | None = None,
) -> gist.SessionScores | None:
    """Every session's dense and lexical score for ``query`` among the rows ``where`` selects,
    and the session of each candidate; None when the index cannot say (it does not hold every row
    the filter selects, some row has no vector, or the query vector's dimension differs).
    ``scan``: the slots and similarities the vector leg's scan of this index computed for the
    same query and filter (:meth:`ScopeIndex.vector_search`); without it the rows are scanned here."""
    q = np.asarray(query_vector, dtype=np.float32)
    if not (idx.only_active and idx.vector_ready and idx.holds(where)) or q.shape != (idx.dim,) or not idx.dim:
        return None
    numeric, rest = _split(where)
    tables = _tables(idx, _entry(idx, rest), numeric, gap_s)
    if tables.counts.size < 2:
        return None
    sims: np.ndarray | None = None
    if scan is not None:
        scanned, scanned_sims = scan
        by_slot = np.full(len(idx.ids), np.nan, dtype=np.float32)
        by_slot[scanned] = scanned_sims
        sims = by_slot[tables.slots]
        if np.isnan(sims).any():  # not the scan of these rows: scan them here
            sims = None
    if sims is None:
        sims = idx.vectors[tables.slots].astype(np.float32) @ q
    n = tables.counts.size
    dense = np.bincount(tables.labels, weights=sims, minlength=n) / np.maximum(tables.counts, 1.0)
    query_tf: dict[str, int] = {}
    term_tf: dict[str, np.ndarray] = {}
    for term in tokenize(query):
        post = idx.bm25.postings(term)
        if not post:
            continue
        query_tf[term] = query_tf.get(term, 0) + 1
        if term in term_tf:
            continue
        pos = idx.pos
        slots = np.fromiter((pos.get(rid, -1) for rid in post), dtype=np.int64, count=len(post))
        tfs = np.fromiter(post.values(), dtype=np.float64, count=len(post))
        labels = np.where(slots >= 0, tables.label_of_slot[slots], -1)
        keep = labels >= 0
        term_tf[term] = np.bincount(labels[keep], weights=tfs[keep], minlength=n)
    lexical = gist.session_bm25(query_tf, term_tf, tables.lengths)
    of: dict[str, int] = {}
    for cid in candidate_ids:
        slot = idx.pos.get(cid)
        if slot is not None and (s := int(tables.label_of_slot[slot])) >= 0:
            of[cid] = s
    return gist.SessionScores(dense=dense, lexical=lexical, of=of)
