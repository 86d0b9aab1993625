"""Test support for the Memory Console: seeded data (with hostile strings) and a local stand-in for
the LangBot host around the page (asset serving with the host's CSP, the sandboxed iframe, the
postMessage bridge and the page-api forwarding to the real ``handle_api``)."""
