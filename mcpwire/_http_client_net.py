"""Network helpers of the HTTP client: TLS contexts and short reasons for failures.

``ssl_context`` builds the context an ``https`` URL is opened with: the system
trust store with certificate and host name verification by default, none with
``verify=False``, or the caller's own ``ssl.SSLContext``; ALPN offers
``http/1.1``, the only protocol spoken. ``describe`` turns a connection
failure into a short reason, the operating system's (or OpenSSL's) words
when there are some, looking through the exceptions anyio wraps them in.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    import ssl

__all__ = ("Verify", "describe", "ssl_context")

Verify = Union[bool, "ssl.SSLContext"]


def ssl_context(verify: Verify) -> ssl.SSLContext:
    """The TLS context for ``verify`` (see the module docstring)."""
    import ssl

    if isinstance(verify, ssl.SSLContext):
        return verify
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context


def describe(exc: BaseException) -> str:
    """A short reason: the operating system's words when there are some."""
    import ssl

    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 5:  # anyio wraps the refusal: look underneath
        if isinstance(cause, ssl.SSLError):  # its errno is OpenSSL's, not the OS's
            detail = getattr(cause, "verify_message", None) or cause.reason or str(cause)
            return f"TLS: {detail} ({cause.reason})" if detail != cause.reason else f"TLS: {detail}"
        if isinstance(cause, OSError) and cause.errno is not None:
            if cause.errno > 0:
                return os.strerror(cause.errno)
            return cause.strerror or str(cause)  # getaddrinfo's own (negative) codes
        cause = cause.__cause__
        seen += 1
    return str(exc) or type(exc).__name__
