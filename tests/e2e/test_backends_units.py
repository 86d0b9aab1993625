"""The e2e stack's choice of LangBot storage backends (e2e/backends.py), checked without LangBot running
(default, non-e2e suite)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from e2e import backends
from e2e.backends import BackendError, BackendSettings, langbot_env
from e2e.stack import HOST_VENV

DATA = Path("/run/x/langbot/data")


def test_default_is_what_langbot_ships() -> None:
    settings = BackendSettings.from_env({})
    assert (settings.db, settings.vdb, settings.is_default) == ("sqlite", "chroma", True)
    assert langbot_env(settings, DATA) == {"DATABASE__USE": "sqlite", "VDB__USE": "chroma"}


def test_env_vars_pick_the_backends() -> None:
    settings = BackendSettings.from_env({"LTM_E2E_DB": " PostgreSQL ", "LTM_E2E_VDB": "seekdb"})
    assert (settings.db, settings.vdb, settings.label, settings.is_default) == (
        "postgresql",
        "seekdb",
        "postgresql+seekdb",
        False,
    )


@given(st.text(min_size=1, max_size=12).filter(lambda s: s.strip().lower() not in backends.DATABASES))
def test_an_unknown_database_is_refused(name: str) -> None:
    with pytest.raises(BackendError, match="LTM_E2E_DB"):
        BackendSettings.from_env({"LTM_E2E_DB": name})


@given(st.text(min_size=1, max_size=12).filter(lambda s: s.strip().lower() not in backends.VECTOR_DBS))
def test_an_unknown_vector_db_is_refused(name: str) -> None:
    with pytest.raises(BackendError, match="LTM_E2E_VDB"):
        BackendSettings.from_env({"LTM_E2E_VDB": name})


def test_postgresql_points_langbot_at_the_local_server() -> None:
    env = langbot_env(BackendSettings(db="postgresql"), DATA, pg_port=54321)
    assert env["DATABASE__USE"] == "postgresql"
    assert env["DATABASE__POSTGRESQL__HOST"] == "127.0.0.1" and env["DATABASE__POSTGRESQL__PORT"] == "54321"
    assert env["DATABASE__POSTGRESQL__DATABASE"] == backends.PG_DATABASE
    with pytest.raises(BackendError, match="port"):
        langbot_env(BackendSettings(db="postgresql"), DATA)


def test_embedded_vector_stores_keep_their_files_in_langbot_data() -> None:
    seekdb = langbot_env(BackendSettings(vdb="seekdb"), DATA)
    assert seekdb["VDB__USE"] == "seekdb" and seekdb["VDB__SEEKDB__MODE"] == "embedded"
    assert seekdb["VDB__SEEKDB__PATH"] == str(DATA / "seekdb")
    milvus = langbot_env(BackendSettings(vdb="milvus"), DATA)
    assert milvus["VDB__MILVUS__URI"] == str(DATA / "milvus.db")  # a *.db uri is what runs Milvus Lite


def test_pgvector_lives_in_langbots_own_postgresql_database() -> None:
    env = langbot_env(BackendSettings(db="postgresql", vdb="pgvector"), DATA, pg_port=54321)
    assert env["VDB__USE"] == "pgvector" and env["VDB__PGVECTOR__USE_BUSINESS_DATABASE"] == "true"
    assert env["DATABASE__USE"] == "postgresql" and env["DATABASE__POSTGRESQL__PORT"] == "54321"
    assert not any(k.startswith("VDB__PGVECTOR__") and k != "VDB__PGVECTOR__USE_BUSINESS_DATABASE" for k in env)
    assert backends.missing_requirements(Path("/nonexistent"), BackendSettings(db="postgresql", vdb="pgvector")) == []


def test_pgvector_without_postgresql_is_refused_with_the_fix() -> None:
    with pytest.raises(BackendError, match="LTM_E2E_DB=postgresql"):
        BackendSettings.from_env({"LTM_E2E_VDB": "pgvector"})
    with pytest.raises(BackendError, match="LTM_E2E_DB=postgresql"):
        BackendSettings(db="sqlite", vdb="pgvector")
    assert BackendSettings.from_env({"LTM_E2E_DB": "postgresql", "LTM_E2E_VDB": "pgvector"}).label == (
        "postgresql+pgvector"
    )  # positive control


def _template() -> dict:
    found = sorted(HOST_VENV.glob("lib/python*/site-packages/langbot/templates/config.yaml"))
    if not found:
        pytest.skip(f"no LangBot in {HOST_VENV}")
    return yaml.safe_load(found[0].read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "settings",
    [
        BackendSettings(db="postgresql", vdb="seekdb"),
        BackendSettings(vdb="milvus"),
        BackendSettings(db="postgresql", vdb="pgvector"),
        BackendSettings(),
    ],
    ids=lambda s: s.label,
)
def test_every_override_names_a_key_of_langbots_config_template(settings: BackendSettings) -> None:
    """LangBot applies an ``A__B`` override to an existing key by that key's type and silently creates
    missing ones as strings, so a misspelt key would leave the backend at its default."""
    template = _template()
    for name, value in langbot_env(settings, DATA, pg_port=5555).items():
        node = template
        for key in name.lower().split("__"):
            assert isinstance(node, dict) and key in node, f"{name}: no {key!r} in LangBot's config template"
            node = node[key]
        assert not isinstance(node, dict | list), name
        if isinstance(node, bool):
            assert value in ("true", "false"), (name, value)  # LangBot reads true/1/yes/on, anything else is false
        elif isinstance(node, int):
            int(value)  # LangBot converts by the template's type


def test_missing_requirements_follow_the_installed_dist_info(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    seekdb = BackendSettings(vdb="seekdb")
    assert backends.missing_requirements(tmp_path, seekdb) == ["pyseekdb==1.4.0.post1", "pylibseekdb==1.4.0"]
    (site / "pyseekdb-1.4.0.post1.dist-info").mkdir()
    (site / "pylibseekdb-1.4.0.dist-info").mkdir()
    assert backends.missing_requirements(tmp_path, seekdb) == []
    assert backends.missing_requirements(tmp_path, BackendSettings(vdb="milvus")) == ["milvus-lite>=2.4"]
    (site / "milvus_lite-3.2.2.dist-info").mkdir()  # dist-info names use underscores
    assert backends.missing_requirements(tmp_path, BackendSettings(vdb="milvus")) == []
    assert backends.missing_requirements(tmp_path, BackendSettings()) == []


def test_the_postgres_server_listens_on_loopback_only() -> None:
    argv = backends.postgres_argv(Path("/pg/bin"), Path("/pg/data"), 6000)
    pairs = dict(a.split("=", 1) for a in argv if "=" in a)
    assert pairs["listen_addresses"] == "127.0.0.1" and pairs["port"] == "6000"
    assert pairs["unix_socket_directories"] == ""
