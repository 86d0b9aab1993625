"""Storage key layouts: every key the service writes for a scope is built here, and every listing
that scans keys keeps a key only when :func:`scope_owns` finds its owner equal to the scope's,
never by prefix. ``<kb>`` = :func:`ltm.domain.keys.kb_part`; ``<owner>`` = a user key or scope key
(no raw ``#``; a ``/`` may occur inside, so every layout ends in a fixed-form tail and is parsed
from both ends). :func:`parse_storage_key` is the one parser (``docs/storage-keys.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .keys import kb_part, key_part
from .scope import Scope

PROFILE_PREFIX = "profile/"  # profile/<scope_key>#session, profile/<user_key>#speaker:<sender>
INJECT_PREFIX = "inject/"  # inject/<scope_key>
LEDGER_PREFIX = "ledger/"  # ledger/<scope_key>: the usage ledger of a memory space
AUDIT_PREFIX = "audit/"  # audit/<kb>/<user_key>/head, audit/<kb>/<user_key>/c/<n>
TOMB_PREFIX = "tomb/"  # tomb/<kb>/<user_key>/<tombstone id>
CAND_PREFIX = "cand/"  # cand/<kb>/<user_key>/{open,head,i/<n>,r/<candidate id>}
PROPOSAL_PREFIX = "consolidation/"  # consolidation/<user_key>/<proposal id> (the KB is in the record)
FENCE_PREFIX = "fence/"  # fence/<lock key>: l2:<kb>:<user_key>, l1:<profile key>
NO_KB_LOG = "!"  # the knowledge-base part of the log key of a scope without a memory KB (never a quote() result)

_OWNER = r"(?P<owner>[^#]+)"
_KB = r"(?P<kb>[^/:]+)"
_PROFILE_RE = (
    ("profile.session", re.compile(r"^" + _OWNER + r"#session$")),
    ("profile.speaker", re.compile(r"^" + _OWNER + r"#speaker:(?P<tail>[^#:]+)$")),
)
_LAYOUT_RE = (
    ("inject", re.compile(r"^inject/" + _OWNER + r"$")),
    ("audit", re.compile(r"^audit/" + _KB + "/" + _OWNER + r"/(?P<tail>head|c/\d+)$")),
    ("tombstone", re.compile(r"^tomb/" + _KB + "/" + _OWNER + r"/(?P<tail>tb_[0-9a-f]{16})$")),
    ("candidate", re.compile(r"^cand/" + _KB + "/" + _OWNER + r"/(?P<tail>open|head|i/\d+|r/cand_[0-9a-f]{20})$")),
    ("proposal", re.compile(r"^consolidation/" + _OWNER + r"/(?P<tail>cp_[0-9a-f]{20})$")),
)
_L2_LOCK_RE = re.compile(r"^l2:" + _KB + ":" + _OWNER + r"$")


@dataclass(frozen=True)
class StorageKey:
    """A parsed storage key (or lock key) of one scope."""

    layout: str  # profile.session/.speaker, inject, audit, tombstone, candidate, proposal, l2 (lock), l1.* (lock)
    owner: str  # the user key or scope key, exactly as in the key
    kb: str = ""  # the encoded knowledge-base part ("" when the layout has none)
    tail: str = ""  # what follows the owner: a sender part, a record id, ...


def _match(layouts: tuple[tuple[str, re.Pattern[str]], ...], text: str, prefix: str = "") -> StorageKey | None:
    for layout, rx in layouts:
        m = rx.match(text)
        if m:
            d = m.groupdict()
            return StorageKey(prefix + layout, d["owner"], d.get("kb") or "", d.get("tail") or "")
    return None


def parse_lock_key(lock_key: str) -> StorageKey | None:
    """``l2:<kb>:<user_key>`` (layout ``l2``) or ``l1:<profile key>`` (``l1.profile.*``)."""
    if lock_key.startswith("l1:"):
        return _match(_PROFILE_RE, lock_key[3:], "l1.")
    m = _L2_LOCK_RE.match(lock_key)
    return StorageKey("l2", m["owner"], m["kb"]) if m else None


def parse_storage_key(key: str) -> StorageKey | None:
    """The layout and owner of a storage key this plugin writes for a scope, or None (other keys:
    knowledge bases, documents, the journal)."""
    key = str(key or "")
    if key.startswith(PROFILE_PREFIX):
        return _match(_PROFILE_RE, key[len(PROFILE_PREFIX) :])
    if key.startswith(FENCE_PREFIX):
        return parse_lock_key(key[len(FENCE_PREFIX) :])
    return _match(_LAYOUT_RE, key)


def scope_owns(scope: Scope, key: str | StorageKey | None, *, lock: bool = False) -> bool:
    """Whether a storage key (or, with ``lock``, a lock key) belongs to ``scope``: its owner and
    knowledge base compared exactly (a key whose owner merely starts with the scope's is not its)."""
    k = key if isinstance(key, StorageKey) or key is None else (parse_lock_key(key) if lock else parse_storage_key(key))
    if k is None:
        return False
    layout = k.layout.removeprefix("l1.")
    kb = kb_part(scope.collection) if scope.collection else ""
    if layout == "profile.session":
        return k.owner == scope.scope_key
    if layout == "profile.speaker":
        return k.owner == scope.user_key
    if layout == "inject":
        return k.owner == scope.scope_key
    if layout == "audit":
        return k.owner == scope.user_key and k.kb == (kb or NO_KB_LOG)
    if layout in ("tombstone", "candidate", "l2"):
        return bool(kb) and k.owner == scope.user_key and k.kb == kb
    if layout == "proposal":
        return k.owner == scope.user_key  # the KB is checked against the record
    return False


def owned_keys(scope: Scope, keys: Sequence[str], *, lock: bool = False) -> list[str]:
    return [k for k in keys if scope_owns(scope, k, lock=lock)]


def scope_fence_keys(scope: Scope, lock_keys: Iterable[str]) -> list[str]:
    """The write fences that concern one scope, in order: its L2 fence in its knowledge base and its
    profiles' L1 fences. What the console lists for a scope is what clearing its fences lifts."""
    return sorted(owned_keys(scope, list(lock_keys), lock=True))


def audit_log_key(scope: Scope) -> str:
    """The audit log of one memory: per knowledge base AND user key, so two memory knowledge bases
    that share a user key (the same chat) never share a log. ``<kb>/<user_key>``; the KB part is
    percent-quoted, so the first ``/`` always ends it."""
    kb = kb_part(scope.collection) if scope.collection else NO_KB_LOG
    return f"{kb}/{scope.user_key}"


def parse_audit_log_key(log_key: str) -> tuple[str, str]:
    """(encoded KB part, user_key) of an :func:`audit_log_key`."""
    kb, _, user_key = log_key.partition("/")
    return ("" if kb == NO_KB_LOG else kb), user_key


def speaker_profile_key(scope: Scope, sender_id: str) -> str:
    """Speaker profiles follow the L2 sharing: per session, or per bot in ``bot`` isolation."""
    return f"{scope.user_key}#speaker:{key_part(sender_id)}"


def session_profile_key(scope: Scope) -> str:
    return f"{scope.scope_key}#session"


def profile_storage_key(profile_key: str) -> str:
    return PROFILE_PREFIX + profile_key


def l1_lock_key(profile_key: str) -> str:
    return "l1:" + profile_key


def l2_lock_key(scope: Scope) -> str:
    return f"l2:{kb_part(scope.collection)}:{scope.user_key}"


def inject_key(scope: Scope) -> str:
    return INJECT_PREFIX + scope.scope_key


def ledger_key(scope: Scope) -> str:
    return LEDGER_PREFIX + scope.scope_key


def review_base(scope: Scope) -> str:
    """``<kb>/<user_key>``: the part of the review queue's keys (candidates, tombstones) that names the scope."""
    return f"{kb_part(scope.collection)}/{scope.user_key}"


def tombstone_key(scope: Scope, tombstone_id: str) -> str:
    return f"{TOMB_PREFIX}{review_base(scope)}/{tombstone_id}"


def candidate_key(scope: Scope, tail: str) -> str:
    """``tail``: ``open``, ``head``, ``i/<n>`` or ``r/<candidate id>``."""
    return f"{CAND_PREFIX}{review_base(scope)}/{tail}"


def proposal_key(user_key: str, proposal_id: str) -> str:
    return f"{PROPOSAL_PREFIX}{user_key}/{proposal_id}"
