"""The one EventListener of the plugin.

- ``PersonMessageReceived``: start the turn's query embedding early (``early.py``), so that the
  recall of the hook below finds it ready;
- ``PromptPreProcessing``: recall once and inject the memory block into ``default_prompt``;
- ``NormalMessageResponded`` (when ``candidate_extraction_enabled``): propose review candidates from
  the user's own text of the turn (the query variable ``user_message_text``; never the reply in
  ``response_text``, never the injected block), once per query even when the host emits the event
  several times.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from langbot_plugin.api.definition.components.common.event_listener import EventListener
from langbot_plugin.api.entities import context, events
from langbot_plugin.api.entities.builtin.provider.message import Message

from components.background_calls import running_background_work
from components.event_listener.early import EarlyTurns
from components.turn_scope import CONTEXT_VAR, pipeline_knowledge_bases, scope_of_turn
from ltm.i18n import error_text
from ltm.service import (
    HOST_CALLS,
    TURN_TIMES,
    Actor,
    ExtractReport,
    Injection,
    InjectionSnapshot,
    LtmError,
    MemoryService,
    ReviewQueue,
    Scope,
    ServedTurns,
    TurnUsage,
    identity,
    neutralize,
    note_host_call,
    note_time,
)

log = logging.getLogger(__name__)
COMMAND_PREFIXES = ("!", "！")
SEEN_QUERIES = 512


async def inject_memory(
    service: MemoryService,
    ctx: Any,
    served: ServedTurns | None = None,
    on_done: Callable[[Scope, InjectionSnapshot], None] | None = None,
    early: EarlyTurns | None = None,
) -> Injection | None:
    """The host's side of the turn: query variables -> scope -> ``service.prepare_turn`` -> the
    block into the prompt and the query variable set -> ``service.record_turn`` (the snapshot).

    ``served`` learns which chat identity this turn's block covered, so that the memory engine
    does not hand the runner the same memories again as knowledge results. ``early`` starts the
    query embedding the turn's message noted (alongside the read of the query variables) and
    learns the chat's memory KB for the next message."""
    if early is not None:
        early.hook(getattr(ctx, "query_id", None))
    started = time.perf_counter()
    note_host_call(2)
    variables, bot_uuid = await asyncio.gather(ctx.get_query_vars(), ctx.get_bot_uuid())
    note_time("vars", (time.perf_counter() - started) * 1000)
    variables = dict(variables or {})
    # The chat text is only a query here: what cannot be stored or seen (a lone surrogate) goes.
    text = neutralize(str(variables.get("user_message_text") or ""))
    if text.lstrip().startswith(COMMAND_PREFIXES):
        return None  # PromptPreProcessing also fires for commands; nothing to recall
    started = time.perf_counter()
    scope = await scope_of_turn(service, variables, session_name=ctx.event.session_name, bot_uuid=str(bot_uuid or ""))
    note_time("scope", (time.perf_counter() - started) * 1000)
    kb = scope.collection
    if early is not None:
        early.learn(ctx.event.session_name, kb)
    log.info("memory scope resolved: %s (kb=%s, isolation=%s)", scope.user_key, kb or "-", scope.isolation)
    # ``_knowledge_base_uuids`` stays as the host set it: a runner retrieves from its own selector's
    # KBs whatever the variable says (host reference sections 2 and 10), so editing it costs two host calls
    # and changes nothing; the engine answers the served chat with nothing instead.

    injection = await service.prepare_turn(
        scope,
        text,
        speaker_name=str(variables.get("sender_name") or ""),
        query_id=getattr(ctx, "query_id", None),
        served=served,
        who=identity(kb, ctx.event.session_name, str(bot_uuid or ""), scope.sender_id),
    )
    if injection is None:  # auto-recall is off
        return None
    # the host's side of the turn: the block into the prompt, the payload into the query variables
    if injection.block:
        ctx.event.default_prompt.append(Message(role="system", content=injection.block))
    started = time.perf_counter()
    note_host_call(1)
    try:
        await ctx.set_query_var(CONTEXT_VAR, injection.payload)
    finally:
        # the snapshot is queued once the turn's own host writes are answered: where background work
        # starts at once (no invocation bound), its storage write does not queue ahead of them
        service.record_turn(scope, injection, pipeline_knowledge_bases(variables))
    note_time("writes", (time.perf_counter() - started) * 1000)
    if on_done is not None:
        on_done(scope, injection.snapshot)
    return injection


async def metered_turn(
    service: MemoryService, ctx: Any, served: ServedTurns | None = None, early: EarlyTurns | None = None
) -> Injection | None:
    """:func:`inject_memory` with its cost reported to the usage ledger: wall milliseconds, host
    calls (counted by the host adapters through :data:`ltm.ports.HOST_CALLS`), memories and tokens.
    The report is queued, never awaited: the ledger writes it after the hook. Where the turn's
    milliseconds went (:data:`ltm.service.prefetch.TURN_TIMES`) is its log line."""
    box = [0]
    times: dict[str, float] = {}
    seen: list[tuple[Scope, InjectionSnapshot]] = []
    token = HOST_CALLS.set(box)
    timing = TURN_TIMES.set(times)
    started = time.perf_counter()
    try:
        done = await inject_memory(
            service, ctx, served, on_done=lambda scope, snap: seen.append((scope, snap)), early=early
        )
    finally:
        HOST_CALLS.reset(token)
        TURN_TIMES.reset(timing)
    total = (time.perf_counter() - started) * 1000
    for _scope, snap in seen:
        log.info(
            "injection ready: %d block(s), %d chars, %d episodes; turn ms: %s",
            snap.blocks, snap.chars, len(snap.episodes), turn_times(total, times, box[0]),
        )  # fmt: skip
    for scope, snap in seen:
        usage = TurnUsage(
            at=snap.at,
            query_id=snap.query_id,
            memories=len(snap.episodes),
            tokens=snap.block_tokens,
            host_calls=box[0],
            hook_ms=round(total),
        )
        service.ledger.turn(scope, usage)
    return done


def turn_times(total: float, times: dict[str, float], host_calls: int) -> str:
    """``total=.. vars=.. scope=.. recall=.. embed=.. render=.. writes=.. calls=N early=0|1``: one
    turn's milliseconds by phase (what ``benchmarks.load`` reads from the plugin's log)."""
    parts = [f"total={total:.1f}"]
    for phase in ("vars", "scope", "recall", "embed", "render", "writes"):
        parts.append(f"{phase}={times.get(phase, 0.0):.1f}")
    parts.append(f"calls={host_calls}")
    parts.append(f"early={int('embed_early' in times)}")
    return " ".join(parts)


async def extract_candidates(service: MemoryService, review: ReviewQueue, ctx: Any) -> ExtractReport | None:
    """One turn's candidates: the user's text and the current speaker from the query variables."""
    variables = dict(await ctx.get_query_vars() or {})
    text = str(variables.get("user_message_text") or "")
    if not text.strip() or text.lstrip().startswith(COMMAND_PREFIXES):
        return None
    session = getattr(ctx.event, "session", None)
    bot = getattr(session, "bot_uuid", None) or await ctx.get_bot_uuid()
    scope = await scope_of_turn(service, variables, session=session, bot_uuid=str(bot or ""))
    if not scope.collection:
        log.info("candidate extraction skipped: no memory knowledge base for %s", scope.scope_key)
        return None
    qid = getattr(ctx, "query_id", None)
    actor = Actor(surface="listener", sender_id=scope.sender_id, query_id=qid)
    return await review.extract(scope, text, actor, source_ref=f"query:{qid}")


class MemoryListener(EventListener):
    async def initialize(self) -> None:
        await super().initialize()
        seen: deque[Any] = deque(maxlen=SEEN_QUERIES)
        told: set[str] = set()
        self.early = EarlyTurns(self.plugin)

        def unavailable(exc: LtmError) -> None:
            """A refusal of the whole turn's memory reaches the operator's log once per reason at
            WARNING (the chat goes on without memory; the verbs and health give the same text)."""
            text = error_text(exc, self.plugin.service.settings.language)
            if exc.key not in told:
                told.add(exc.key)
                log.warning("memory unavailable for this turn: %s", text)
            else:
                log.info("memory unavailable for this turn: %s", exc.key)

        @self.handler(events.PersonMessageReceived)
        async def on_message(ctx: context.EventContext) -> None:
            # no carrier and no host call awaited here: the pipeline waits for this handler
            try:
                ev = ctx.event
                self.early.message(getattr(ctx, "query_id", None), ev.launcher_type, ev.launcher_id, ev.message_chain)
            except Exception:  # an early start is only a head start; the hook recalls without it
                log.warning("early query embedding not started", exc_info=True)

        @self.handler(events.PromptPreProcessing)
        async def on_prompt(ctx: context.EventContext) -> None:
            try:
                async with running_background_work(self.plugin):
                    served = getattr(self.plugin, "served_turns", None)
                    await metered_turn(self.plugin.service, ctx, served, early=self.early)
            except LtmError as exc:  # e.g. a KB on a backend that drops metadata: said once, in the log
                unavailable(exc)
            except Exception:  # memory must never break the chat
                log.exception("memory injection failed; the turn continues without memory")

        @self.handler(events.NormalMessageResponded)
        async def on_responded(ctx: context.EventContext) -> None:
            review = getattr(self.plugin, "review", None)
            if review is None or not review.settings.enabled:
                # nothing to do, and nothing carried: the reply is sent after this event, so the
                # turn's deferred writes wait for the next call that carries work (the next hook)
                return
            try:
                async with running_background_work(self.plugin):
                    key = getattr(ctx, "query_uuid", None) or getattr(ctx, "query_id", None)
                    if key is not None and key in seen:
                        return  # the host emits this event once per reply part; extract once per turn
                    seen.append(key)
                    await extract_candidates(self.plugin.service, review, ctx)
            except LtmError as exc:
                unavailable(exc)
            except Exception:  # candidates must never break the chat
                log.exception("candidate extraction failed; the turn continues")
