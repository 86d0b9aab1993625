"""The isolation probe in the real host does not raise a false alarm on a backend that shows writes
late (issue 25: SeekDB's vector search sees a new vector 0.1-2 s after its write; the probe searched
89 ms after it and reported red). Runs on every backend the stack is configured with
(``LTM_E2E_VDB``); on SeekDB it is the regression test, on Chroma the positive control."""

from __future__ import annotations

import pytest

from e2e.stack import WEBCHAT_BOT_UUID, Stack

pytestmark = pytest.mark.e2e


def test_the_admin_probe_is_green_twice(stack: Stack) -> None:
    scope = {"kb_id": stack.kb_uuid, "session_name": "person_websocket_rawprobe", "bot_uuid": WEBCHAT_BOT_UUID}
    for _ in range(2):  # twice: the first run's rows must not disturb the second
        diag = stack.page_api("/diagnostics", {**scope, "probe": True})
        checks = {c["name"]: c for c in diag["health"]["checks"]}
        probe = checks["isolation_probe"]
        assert probe["verdict"] == "green", f"{stack.backends.label}: {probe}"
    listed = stack.page_api("/kbs", method="GET")["knowledge_bases"]
    ours = next(k for k in listed if k["kb_id"] == stack.kb_uuid)
    # Milvus and pgvector keep only text, file_id and the chunk uuid: the plugin keeps the scope in file_id
    # and the rest in plugin storage (ADR 0008); the verdict is the probe's, decided when LangBot made the KB
    dropping = stack.backends.vdb in ("milvus", "pgvector")
    assert ours["backend"] == ("drops_metadata" if dropping else "keeps_metadata"), ours
