"""The console's consolidation routes call the same Consolidator as ``!memory consolidate``."""

from __future__ import annotations

from pathlib import Path

from langbot_plugin.api.definition.components.page import PageRequest

from ltm.service.consolidation import ConsolidationSettings
from pages import router
from tests.support import ADMIN, KB, build_service, scope_of, with_consolidator


def _body(**extra: object) -> dict[str, object]:
    return {"kb_id": KB, "session_name": "person_alice", "bot_uuid": "bot1", "sender_id": "alice", **extra}


async def test_preview_and_run_archive_only_superseded(tmp_path: Path) -> None:
    enabled = ConsolidationSettings(
        enabled=True, model_uuid="", min_age_days=0, max_candidates=20, apply_profile_updates=False
    )
    service = await build_service("numpy", tmp_path, consolidator=with_consolidator(None, settings=lambda: enabled))
    consolidator = service.consolidator
    assert consolidator is not None
    a = await scope_of(service)
    old, _ = await service.remember(a, {"content": "Alice lives in Paris"}, ADMIN)
    new, _ = await service.remember(a, {"content": "Alice lives in Berlin", "supersedes": [old.id]}, ADMIN)

    meta = await router.handle(service, PageRequest(endpoint="/meta", method="GET"), consolidator=consolidator)
    assert meta.data["features"]["consolidation"] is True
    prev = await router.handle(
        service, PageRequest(endpoint="/consolidation/preview", method="POST", body=_body()), consolidator=consolidator
    )
    assert prev.error is None, prev.error
    assert (await service.get_episode(a, old.id)).status == "superseded"  # preview changed nothing
    ran = await router.handle(
        service, PageRequest(endpoint="/consolidation/run", method="POST", body=_body()), consolidator=consolidator
    )
    assert ran.error is None, ran.error
    assert ran.data["archived"] == [old.id]
    assert (await service.get_episode(a, old.id)).status == "archived"
    assert (await service.get_episode(a, new.id)).status == "active"  # never archives active records


async def test_routes_refuse_without_consolidator(tmp_path: Path) -> None:
    service = await build_service("numpy", tmp_path)
    resp = await router.handle(service, PageRequest(endpoint="/consolidation/preview", method="POST", body=_body()))
    assert resp.error and "not available" in resp.error
