"""Network helpers of the HTTP client: URLs, TLS contexts, connecting, reasons for failures.

``URL`` is an absolute ``http``/``https`` URL split the way a request needs it
(origin, Host header, target), parsed strictly: no credentials, no whitespace.

``ssl_context`` builds the context an ``https`` URL is opened with: the system
trust store with certificate and host name verification by default, none with
``verify=False``, or the caller's own ``ssl.SSLContext``; ALPN offers
``http/1.1``, the only protocol spoken. ``describe`` turns a connection
failure into a short reason, the operating system's (or OpenSSL's) words
when there are some, looking through the exceptions anyio wraps them in.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.abc
from anyio import EndOfStream

from ._aio_stream import AsyncioStream, running_asyncio_loop
from ._http_client_sock import ConnectionFailed, ProtocolSocket, RedirectRefused, StreamSocket

if TYPE_CHECKING:
    import ssl

__all__ = ("URL", "Verify", "describe", "open_socket", "redirect_target", "ssl_context")

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
    # anyio's TLS wrapper when the peer hangs up, or the socket's reader given
    # the end of input where a response (or the rest of one) was due.
    if isinstance(exc, EndOfStream):
        return "the peer closed the connection"
    return str(exc) or type(exc).__name__


@dataclass(frozen=True, slots=True)
class URL:
    """An absolute ``http``/``https`` URL, split the way a request needs it."""

    raw: str
    scheme: str
    host: str
    port: int
    target: str

    @classmethod
    def parse(cls, text: str) -> URL:
        """Parse an absolute URL; ``ValueError`` says what is wrong with it."""
        if any(c in text for c in "\r\n\t ") or not text.isprintable():
            raise ValueError(f"not a valid URL (whitespace or control characters): {text!r}")
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"only http:// and https:// URLs are supported, not {text!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "credentials in the URL are not sent; use headers (Authorization) "
                f"instead: {text!r}"
            )
        host = parts.hostname
        if not host:
            raise ValueError(f"the URL has no host: {text!r}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"the URL has an invalid port: {text!r}") from None
        if port is None:
            port = 443 if scheme == "https" else 80
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return cls(text, scheme, host, port, target)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def literal(self) -> bool:
        """The host is an IP address (one address: nothing to race for)."""
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True

    @property
    def authority(self) -> str:
        """The Host header value: the port only when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def join(self, reference: str) -> URL:
        """Resolve a reference (RFC 3986 §5) against this URL.

        The reference is checked first: resolving silently drops tabs and line
        ends, so a reference that held them (two ``data:`` lines of an SSE
        ``endpoint`` event, say) would otherwise run together into another URL.
        """
        if not reference.isprintable():
            raise ValueError(f"not a valid URL (whitespace or control characters): {reference!r}")
        return URL.parse(urljoin(self.raw, reference))

    def __str__(self) -> str:
        return self.raw


def redirect_target(url: URL, status: int, location: str | None) -> URL:
    """Where a 3xx from ``url`` leads, if it is followed (see ``_http_client_conn``)."""
    if not location:
        raise RedirectRefused(f"HTTP {status} from {url} without a Location header")
    try:
        target = url.join(location)
    except ValueError as exc:
        raise RedirectRefused(f"HTTP {status} from {url} to an invalid location: {exc}") from None
    if status not in (307, 308):
        raise RedirectRefused(
            f"HTTP {status} redirect from {url} to {target} not followed (only 307 and "
            "308 keep the method and body); use that URL if it is the intended endpoint"
        )
    if target.origin != url.origin:
        raise RedirectRefused(
            f"HTTP {status} redirect from {url} to another origin ({target}) refused; "
            "use that URL directly if it is the intended endpoint"
        )
    return target


async def open_socket(
    url: URL, tls: ssl.SSLContext | None, timeout: float, max_header_size: int
) -> StreamSocket:
    """A new connection to ``url``'s origin, within ``timeout`` seconds, over TLS
    with ``tls`` (SNI and certificate host name: the URL's host); plain TCP on
    asyncio is a ``ProtocolSocket`` (see ``_aio_stream``). ``ConnectionFailed``
    says why there is none."""
    loop = None if tls is not None else running_asyncio_loop()
    try:
        with anyio.fail_after(timeout):
            if loop is not None:
                # Happy eyeballs for a name only: 3.11's race can leak its winner
                # when cancelled, and an IP has no race.
                _, fast = await loop.create_connection(
                    lambda: AsyncioStream(loop),
                    url.host,
                    url.port,
                    happy_eyeballs_delay=None if url.literal else 0.25,
                )
                return ProtocolSocket(fast, url.origin, max_header_size)
            stream: anyio.abc.ByteStream
            if tls is not None:
                stream = await anyio.connect_tcp(
                    url.host,
                    url.port,
                    ssl_context=tls,
                    tls_standard_compatible=False,
                    tls_hostname=url.host,
                )
            else:
                stream = await anyio.connect_tcp(url.host, url.port)
    except TimeoutError:
        raise ConnectionFailed(
            f"cannot connect to {url.authority}: timed out after {timeout:g} s"
        ) from None
    except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:  # EOS: mid-TLS
        raise ConnectionFailed(f"cannot connect to {url.authority}: {describe(exc)}") from exc
    return StreamSocket(stream, url.origin, max_header_size)
