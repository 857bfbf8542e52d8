"""Helpers for ``tests/test_interop_stdio.py``: reference-SDK peers, a stdio tee, a wire validator.

``ref_server.py`` (reference SDK server), ``paged_server.py`` (mcpwire server with tiny pages),
``shapes_server.py`` (mcpwire server with many return shapes) and ``tee.py`` are run as child
processes; ``wirecheck.py`` is imported by the tests.
"""
