"""The verdicts of the request gate on header values, cached (HTTP server).

Clients send the same ``Accept``, ``Content-Type``, ``Host`` and ``Origin``
on every request, so what the server decides about each value is kept in a
small LRU cache per rule: a request's headers are parsed once per distinct
value, not once per request and rule (media types are split on quoted-string
aware separators, hosts and origins parsed and matched against the allow
lists). The rules themselves are ``sansio._http``'s; only values up to
``CACHED_VALUE`` characters are cached, so the caches stay small whatever
clients send, and a longer value is judged afresh each time.
"""

from __future__ import annotations

import functools

from .sansio._http import accepts, host_allowed, is_json_media_type, origin_allowed

__all__ = ("CACHED_VALUE", "host_ok", "json_content", "negotiate", "origin_ok")

#: Header values up to this long have their verdicts cached.
CACHED_VALUE = 256


def _acceptable(accept: str | None) -> tuple[bool, bool]:
    return accepts(accept, "application/json"), accepts(accept, "text/event-stream")


_accept_verdicts = functools.lru_cache(maxsize=128)(_acceptable)
_json_verdicts = functools.lru_cache(maxsize=64)(is_json_media_type)
_host_verdicts = functools.lru_cache(maxsize=64)(host_allowed)
_origin_verdicts = functools.lru_cache(maxsize=64)(origin_allowed)


def negotiate(accept: str | None) -> tuple[bool, bool]:
    """Whether ``Accept`` takes ``application/json``, and ``text/event-stream``."""
    if accept is not None and len(accept) > CACHED_VALUE:
        return _acceptable(accept)
    return _accept_verdicts(accept)


def json_content(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is ``application/json`` (parameters allowed)."""
    if content_type is not None and len(content_type) > CACHED_VALUE:
        return is_json_media_type(content_type)
    return _json_verdicts(content_type)


def host_ok(host: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether a ``Host`` value is in the allow-list."""
    if host is not None and len(host) > CACHED_VALUE:
        return host_allowed(host, allowed)
    return _host_verdicts(host, allowed)


def origin_ok(origin: str, allowed: tuple[str, ...]) -> bool:
    """Whether an ``Origin`` value is in the allow-list."""
    if len(origin) > CACHED_VALUE:
        return origin_allowed(origin, allowed)
    return _origin_verdicts(origin, allowed)
