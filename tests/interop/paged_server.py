"""An mcpwire server with tiny pages and long-lived caching hints, for the SDK client's pagination.

Run as ``python tests/interop/paged_server.py`` (stdio). Five tools, five resources and five
prompts are served two per page; modern results say ``ttlMs=60000``, ``cacheScope="public"``.
"""

from __future__ import annotations

from mcpwire import Server

server = Server("paged", "0.0.1", page_size=2, cache_ttl_ms=60_000, cache_scope="public")

COUNT = 5


def _register(i: int) -> None:
    def tool(x: int) -> int:
        return x + i

    def resource() -> str:
        return f"resource {i}"

    def prompt(topic: str) -> str:
        return f"prompt {i} about {topic}"

    server.add_tool(tool, name=f"t{i}", description=f"adds {i}")
    server.add_resource(resource, f"paged://r{i}", name=f"r{i}", mime_type="text/plain")
    server.add_prompt(prompt, name=f"p{i}", description=f"prompt {i}")


for _i in range(COUNT):
    _register(_i)

if __name__ == "__main__":
    server.run()
