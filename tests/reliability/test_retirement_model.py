"""A model-based concurrency test of retirement (issue 24, build item 2).

A hypothesis ``RuleBasedStateMachine`` drives the REAL recall index, snapshot store and write
engine (a :class:`MemoryService`) over numpy, Chroma and Qdrant, through a host that applies each
call when it is sent and holds its answer until a rule releases it, in any order
(:mod:`tests.support.held_host`). Rules: turns (recall), remember, forget, archive, supersede,
bulk delete, import, releasing one held answer, a plugin restart (the process's state dropped,
the stores kept), a snapshot flush, TTL expiry, a corrupted stored snapshot. Each operation may
be slow (its host answers, and those of the background work it starts, are held).

The oracle is a plain model: which rows each acknowledged retirement retired, and the logical
time of each acknowledgement. It checks, as operations finish:

- a recall never fails, and never returns a row whose retirement was acknowledged before the
  recall started;
- once a flush that started after a retirement's acknowledgement (in the process that
  acknowledged it) has finished, no stored recall snapshot holds that row.

Examples: ``LTM_STATEFUL_EXAMPLES`` (default 50 per engine) and ``LTM_STATEFUL_STEPS`` (default
40); ``docs/reliability.md`` gives the longer profile.
"""

from __future__ import annotations

import asyncio
import hashlib
import marshal
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ltm.domain.errors import LtmError
from ltm.domain.filters import Criteria, scope_filter
from ltm.service import MemoryService, index_snapshot
from ltm.service.transfer import import_scope
from tests.support import ADMIN, scope_of
from tests.support.held_host import SLOW, HeldWorld, now, settle

EXAMPLES = int(os.environ.get("LTM_STATEFUL_EXAMPLES", "50"))
STEPS = int(os.environ.get("LTM_STATEFUL_STEPS", "40"))
QUERY = "memo"
RETIRING = ("forget", "archive", "supersede", "bulk_delete", "erase")


@dataclass
class Op:
    kind: str
    task: asyncio.Task[Any]
    start: int  # the logical time it started: the number of acknowledgements before it
    process: int
    targets: tuple[str, ...] = ()
    done: bool = False


@dataclass
class Model:
    """What the plugin has acknowledged, in order."""

    clock: int = 0  # acknowledgements so far
    retired: dict[str, tuple[int, int]] = field(default_factory=dict)  # row -> (ack time, process)

    def ack(self) -> int:
        self.clock += 1
        return self.clock


class RetirementMachine(RuleBasedStateMachine):
    kind = "numpy"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="ltm-model-")
        self.loop = asyncio.new_event_loop()
        self.world = HeldWorld(self.kind, Path(self.tmp))
        self.model = Model()
        self.ops: list[Op] = []
        self.process = 0
        self.n = 0
        self.texts: dict[str, str] = {}  # row id -> its text (what a stored snapshot must not keep)
        self.svc: MemoryService = self.run(self.world.process())
        self.scope = self.run(scope_of(self.svc))

    # ---------------------------------------------------------------- plumbing
    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def start(self, kind: str, coro: Any, slow: bool, targets: tuple[str, ...] = ()) -> None:
        token = SLOW.set(slow)
        try:
            task = self.loop.create_task(coro)
        finally:
            SLOW.reset(token)
        self.ops.append(Op(kind, task, self.model.clock, self.process, targets))
        self.step()

    def step(self) -> None:
        self.run(settle())
        self.collect()

    def pick(self, i: int, k: int = 1) -> tuple[str, ...]:
        """``k`` active rows of the scope as the store holds them now (not through the plugin)."""
        rows = self.world.rows(scope_filter(self.scope.user_key, Criteria()))
        self.texts.update(rows)
        active = sorted(rows, key=lambda rid: rows[rid])  # by text: ids are random, a replay must pick alike
        if not active:
            return ()
        return tuple(dict.fromkeys(active[(i + j) % len(active)] for j in range(k)))

    def collect(self) -> None:
        for op in self.ops:
            if op.done or not op.task.done():
                continue
            op.done = True
            if op.task.cancelled():
                continue
            exc = op.task.exception()
            if op.kind == "turn":
                assert exc is None, f"a recall failed: {exc!r}"
                self.check_recall(op, op.task.result())
            elif op.kind == "flush":
                assert exc is None, f"a flush raised: {exc!r}"
                self.check_snapshots(op)
            elif exc is None:
                at = self.model.ack()
                retired = op.targets
                if op.kind == "supersede":
                    retired = tuple(e.id for e in op.task.result()[1])
                if op.kind in RETIRING:
                    for rid in retired:
                        self.model.retired.setdefault(rid, (at, op.process))
                if op.kind == "erase":
                    self.check_erased(op)
            else:
                assert isinstance(exc, LtmError), f"{op.kind} failed with {exc!r}"
        self.ops = [op for op in self.ops if not op.done]

    def check_recall(self, op: Op, res: Any) -> None:
        for r in res.episodes:
            ack = self.model.retired.get(r.episode.id)
            assert ack is None or ack[0] > op.start, (
                f"a recall that started at t={op.start} returned {r.episode.id}, retired at t={ack[0]}"
            )

    def check_snapshots(self, op: Op) -> None:
        due = [rid for rid, (at, proc) in self.model.retired.items() if at <= op.start and proc == op.process]
        if not due:
            return
        stored = self.world.snapshot_values()
        for rid in due:  # the row's text (its id may be named by the row that superseded it)
            text = self.texts[rid].encode()
            held = [k for k, v in stored.items() if text in v]
            assert not held, f"stored snapshot {held} still holds {rid} ({text!r}), retired before a flush that ran"

    def check_erased(self, op: Op) -> None:
        """An erase (ltm/service/erasure.py) is acknowledged once every copy is gone: no stored
        recall snapshot holds the text of a row it erased, even with turns and writes in flight."""
        stored = self.world.snapshot_values()
        for rid in op.targets:
            text = self.texts[rid].encode()
            held = [k for k, v in stored.items() if text in v]
            assert not held, f"stored snapshot {held} still holds {rid} ({text!r}) after its erase was acknowledged"

    def content(self) -> str:
        self.n += 1
        return f"memo number {self.n} of the model."  # no text is a prefix of another

    # ---------------------------------------------------------------- rules
    @initialize(restarted=st.booleans(), first_turn=st.sampled_from(["none", "fast", "slow"]))
    def seed(self, restarted: bool, first_turn: str) -> None:
        """A scope as a chat leaves it: two memories, a turn, a flushed snapshot holding both;
        then, or not, a restart (no index held: the first turn builds or loads it), and, or not,
        the next turn already started (the issue's window: a chat's first turn after a restart)."""
        for _ in range(2):
            self.start("remember", self.svc.remember(self.scope, {"content": self.content()}, ADMIN), False)
        self.start("turn", self.svc.recall(self.scope, QUERY, limit=50, with_profiles=False), False)
        self.start("flush", self.svc.index.flush_snapshots(), False)
        if restarted:
            self.restart()
        if first_turn != "none":
            self.turn(slow=first_turn == "slow")

    @rule(slow=st.booleans())
    def turn(self, slow: bool) -> None:
        self.start("turn", self.svc.recall(self.scope, QUERY, limit=50, with_profiles=False), slow)

    @rule(slow=st.booleans(), via=st.sampled_from(["remember", "import"]))
    def write(self, slow: bool, via: str) -> None:
        """A new memory: through remember (a tool, a command) or an import."""
        if via == "remember":
            self.start("remember", self.svc.remember(self.scope, {"content": self.content()}, ADMIN), slow)
        else:
            payload = {"episodes": [{"id": f"x{self.n}", "content": self.content()}]}
            self.start("import", import_scope(self.svc, self.scope, payload, ADMIN), slow)

    @rule(slow=st.booleans(), verb=st.sampled_from(RETIRING), i=st.integers(0, 50), k=st.integers(1, 3))
    def retire(self, slow: bool, verb: str, i: int, k: int) -> None:
        """A forget, an archive, a correction (supersede), a bulk delete or an erase of ``k`` rows."""
        victims = self.pick(i, k if verb in ("bulk_delete", "erase") else 1)
        if not victims:
            return
        if verb == "forget":
            coro = self.svc.forget(self.scope, victims[0], ADMIN)
        elif verb == "archive":
            coro = self.svc.set_status(self.scope, victims[0], "archived", ADMIN)
        elif verb == "supersede":
            coro = self.svc.remember(self.scope, {"content": self.content(), "supersedes": [victims[0]]}, ADMIN)
        elif verb == "erase":
            coro = self.svc.erase_episodes(self.scope, victims, ADMIN)
        else:
            coro = self.svc.bulk_delete(self.scope, Criteria(statuses=None, ids=victims), ADMIN)
        self.start(verb, coro, slow, victims)

    @rule(slow=st.booleans())
    def flush(self, slow: bool) -> None:
        self.start("flush", self.svc.index.flush_snapshots(), slow)

    @precondition(lambda self: bool(self.world.held.pending))
    @rule(i=st.integers(0, 20), n=st.integers(1, 3))
    def release(self, i: int, n: int) -> None:
        """The host answers ``n`` held calls, the ``i``-th held first (then the next ones held)."""
        for _ in range(n):
            if self.world.held.release(i) is None:
                break
            self.step()

    @rule(what=st.sampled_from(["restart", "ttl_expiry"]))
    def disrupt(self, what: str) -> None:
        """A plugin restart, or every held index growing older than its TTL."""
        if what == "restart":
            self.restart()
        else:
            self.world.mono += 10_000.0

    def restart(self) -> None:
        """The process goes; storage stays. Writes in flight are answered first (a write cut off
        is the journal's matter, tests/reliability/test_restart.py); every other task of the old
        process (turns, builds, flushes, refreshes) is cancelled mid-way."""
        for _ in range(500):
            if not any(op.kind not in ("turn", "flush") for op in self.ops):
                break
            self.world.held.release(0)
            self.step()
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.step()
        self.process += 1
        self.svc = self.run(self.world.process())
        self.scope = self.run(scope_of(self.svc))

    @rule(mode=st.sampled_from(["flip", "numeric_width", "blob", "truncate"]), at=st.integers(0, 10_000))
    def corrupt_snapshot(self, mode: str, at: int) -> None:
        stored = self.world.snapshot_values()
        for key, raw in stored.items():
            if not raw:
                continue
            if mode == "flip":
                value = bytearray(raw)
                value[at % len(value)] ^= 0x5A
                bad = bytes(value)
            elif mode == "truncate":
                bad = raw[: at % len(raw)]
            else:
                body = _sealed_body(raw)
                if body is None:  # a value corrupted before is left as it is
                    continue
                if mode == "numeric_width" and len(body[12]) % 32 == 0:
                    body[12] = np.frombuffer(body[12], "<f8").reshape(-1, 4)[:, :3].tobytes()
                elif body[8]:
                    body[8] = [b"\x00not metadata", *body[8][1:]]
                data = marshal.dumps(tuple(body), index_snapshot.MARSHAL_VERSION)
                bad = index_snapshot.MAGIC + hashlib.sha256(data).digest() + data  # a valid digest
            now(self.world.inner_kv.set(key, bad))

    @invariant()
    def nothing_failed_unseen(self) -> None:
        self.collect()

    def teardown(self) -> None:
        try:
            for _ in range(500):  # every answer given: what was waiting finishes and is checked
                if not self.world.held.pending:
                    break
                self.world.held.release(0)
                self.step()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.run(settle())
        finally:
            self.loop.close()
            self.world.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


def _sealed_body(raw: bytes) -> list[Any] | None:
    """The record of a stored snapshot whose digest holds (a value corrupted before: None)."""
    head = len(index_snapshot.MAGIC) + 32
    digest = raw[len(index_snapshot.MAGIC) : head]
    if not raw.startswith(index_snapshot.MAGIC) or hashlib.sha256(raw[head:]).digest() != digest:
        return None
    body = marshal.loads(raw[head:])
    return list(body) if isinstance(body, tuple) and len(body) == 15 else None


SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # LTM_STATEFUL_NO_SHRINK=1: report the first failing run as found (searching long profiles)
    phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("LTM_STATEFUL_NO_SHRINK")],
)


class NumpyRetirement(RetirementMachine):
    kind = "numpy"


class ChromaRetirement(RetirementMachine):
    kind = "chroma"


class QdrantRetirement(RetirementMachine):
    kind = "qdrant"


TestRetirementNumpy = NumpyRetirement.TestCase
TestRetirementNumpy.settings = SETTINGS
TestRetirementChroma = ChromaRetirement.TestCase
TestRetirementChroma.settings = SETTINGS
TestRetirementQdrant = QdrantRetirement.TestCase
TestRetirementQdrant.settings = SETTINGS
