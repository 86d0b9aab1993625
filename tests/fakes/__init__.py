"""Test doubles shared by the test suite. They fake the LangBot host, never the SDK."""

from .host_runtime import FakeHostHandler, make_plugin

__all__ = ["FakeHostHandler", "make_plugin"]
