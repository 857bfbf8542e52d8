"""The pure half of MCP authorization (``mcpwire.sansio._oauth``).

* ``WWW-Authenticate`` (RFC 9110 §11.6.1): table tests of real challenges, a
  Hypothesis round trip (``build_challenge`` then ``parse_challenges``), and
  random text, which may only ever raise ``AuthorizationError``.
* Discovery URLs in the spec's order (RFC 9728 §3.1, RFC 8414 §3.1, OIDC).
* Resource and issuer checks, scope selection, PKCE, token responses.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import AuthorizationError
from mcpwire.sansio import _challenge as ch
from mcpwire.sansio import _oauth as o
from mcpwire.sansio._json import JSONObject, JSONValue

# -- WWW-Authenticate ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Bearer", [("bearer", {}, None)]),
        (
            'Bearer resource_metadata="https://x.example/.well-known/oauth-protected-resource"',
            [
                (
                    "bearer",
                    {"resource_metadata": "https://x.example/.well-known/oauth-protected-resource"},
                    None,
                )
            ],
        ),
        (
            'Bearer error="insufficient_scope", scope="a b", error_description="need \\"b\\""',
            [
                (
                    "bearer",
                    {
                        "error": "insufficient_scope",
                        "scope": "a b",
                        "error_description": 'need "b"',
                    },
                    None,
                )
            ],
        ),
        ("bearer realm=example , scope=x", [("bearer", {"realm": "example", "scope": "x"}, None)]),
        (
            'Basic realm="a, b", Bearer scope="s"',
            [("basic", {"realm": "a, b"}, None), ("bearer", {"scope": "s"}, None)],
        ),
        ("Negotiate abc123==", [("negotiate", {}, "abc123==")]),
        ("Negotiate abc=, Bearer", [("negotiate", {}, "abc="), ("bearer", {}, None)]),
        (
            'DPoP algs="ES256", Bearer realm=""',
            [("dpop", {"algs": "ES256"}, None), ("bearer", {"realm": ""}, None)],
        ),
        (", ,Bearer ,", [("bearer", {}, None)]),
        ('Bearer Scope="UPPER"', [("bearer", {"scope": "UPPER"}, None)]),
    ],
)
def test_challenges(header: str, expected: list[tuple[str, dict[str, str], str | None]]) -> None:
    got = [(c.scheme, dict(c.params), c.token68) for c in ch.parse_challenges(header)]
    assert got == expected


@pytest.mark.parametrize(
    "header",
    [
        'Bearer scope="unterminated',
        'Bearer scope="a", scope="b"',
        "Bearer a=b=c",
        'Bearer scope="a" realm="b"',
        "=Bearer",
        'Bearer"x"',
        "Negotiate abc def",
        "Bearer " + "x" * (ch.MAX_CHALLENGE_SIZE + 1),
    ],
)
def test_malformed_challenges(header: str) -> None:
    with pytest.raises(AuthorizationError):
        ch.parse_challenges(header)


def test_a_token68_may_end_in_equals() -> None:
    # "scope=" alone is a token68 (RFC 9110 §11.2), not a parameter without a value.
    assert ch.parse_challenges("Bearer scope=")[0].token68 == "scope="


def test_bearer_params_picks_the_bearer_challenge() -> None:
    headers = ['Basic realm="r"', 'Bearer scope="mcp:read", resource_metadata="https://a/b"']
    assert o.bearer_params(headers) == {"scope": "mcp:read", "resource_metadata": "https://a/b"}
    assert o.bearer_params(['Basic realm="r"']) == {}


_tokens = st.text(
    alphabet=string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~", min_size=1, max_size=12
)
_values = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\t\u00e9"),
    max_size=30,
)


@given(
    st.lists(
        st.tuples(_tokens, st.dictionaries(_tokens.map(str.lower), _values, max_size=4)),
        min_size=1,
        max_size=3,
    )
)
def test_challenge_round_trip(challenges: list[tuple[str, dict[str, str]]]) -> None:
    header = ", ".join(ch.build_challenge(scheme, params) for scheme, params in challenges)
    parsed = ch.parse_challenges(header)
    assert [(c.scheme, dict(c.params)) for c in parsed] == [
        (scheme.lower(), params) for scheme, params in challenges
    ]


@given(st.text(max_size=80))
def test_random_header_text_never_raises_anything_else(text: str) -> None:
    try:
        ch.parse_challenges(text)
    except AuthorizationError:
        pass


@given(st.text(alphabet='Bearer =,"\\ \tscope', max_size=40))
def test_near_miss_headers_never_raise_anything_else(text: str) -> None:
    try:
        ch.parse_challenges(text)
    except AuthorizationError:
        pass


# -- discovery URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "hint", "expected"),
    [
        (
            "https://mcp.example/mcp",
            None,
            [
                "https://mcp.example/.well-known/oauth-protected-resource/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ],
        ),
        (
            "https://MCP.example:443/a/b/",
            "https://mcp.example/custom.json",
            [
                "https://mcp.example/custom.json",
                "https://mcp.example/.well-known/oauth-protected-resource/a/b",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ],
        ),
        ("http://h:8080", None, ["http://h:8080/.well-known/oauth-protected-resource"]),
    ],
)
def test_prm_urls(server: str, hint: str | None, expected: list[str]) -> None:
    assert o.prm_urls(server, hint) == expected


@pytest.mark.parametrize(
    ("issuer", "expected"),
    [
        (
            "https://auth.example",
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ],
        ),
        (
            "https://auth.example/tenant1",
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_as_metadata_urls(issuer: str, expected: list[str]) -> None:
    assert o.as_metadata_urls(issuer) == expected


def test_fallback_endpoints_are_at_the_origin() -> None:
    got = o.fallback_endpoints("http://localhost:9/some/mcp")
    assert got == {
        "issuer": "http://localhost:9",
        "authorization_endpoint": "http://localhost:9/authorize",
        "token_endpoint": "http://localhost:9/token",
        "registration_endpoint": "http://localhost:9/register",
    }


@pytest.mark.parametrize("bad", ["ftp://x/y", "/relative", "http://", "http://h:99999/", "x"])
def test_bad_urls(bad: str) -> None:
    with pytest.raises(AuthorizationError):
        o.prm_urls(bad, None)


# -- resource and issuer checks --------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "server", "ok"),
    [
        ("https://mcp.example/mcp", "https://mcp.example/mcp", True),
        ("https://MCP.example/mcp/", "https://mcp.example:443/mcp", True),
        ("https://mcp.example", "https://mcp.example/mcp", True),
        ("https://mcp.example/mcp", "https://mcp.example/mcp/sub", True),
        ("https://mcp.example/mc", "https://mcp.example/mcp", False),
        ("https://evil.example.com/mcp", "https://mcp.example/mcp", False),
        ("http://mcp.example/mcp", "https://mcp.example/mcp", False),
        ("https://mcp.example:8443/mcp", "https://mcp.example/mcp", False),
        (42, "https://mcp.example/mcp", False),
    ],
)
def test_check_resource(resource: object, server: str, ok: bool) -> None:
    if ok:
        assert o.check_resource(resource, server) == o.canonical_resource(str(resource))
    else:
        with pytest.raises(AuthorizationError):
            o.check_resource(resource, server)


def _metadata(**extra: JSONValue) -> JSONObject:
    doc: JSONObject = {
        "issuer": "https://auth.example",
        "authorization_endpoint": "https://auth.example/authorize",
        "token_endpoint": "https://auth.example/token",
    }
    doc.update(extra)
    return doc


def test_check_as_metadata() -> None:
    checked = o.check_as_metadata(_metadata(), "https://auth.example")
    assert checked["issuer"] == "https://auth.example"
    for doc in (
        _metadata(issuer="https://attacker.example"),
        _metadata(issuer="https://auth.example/"),
        _metadata(token_endpoint=None),
        _metadata(authorization_endpoint="javascript:alert(1)"),
        _metadata(code_challenge_methods_supported=["plain"]),
        _metadata(code_challenge_methods_supported="S256"),
        _metadata(token_endpoint="http://auth.example/token"),
    ):
        with pytest.raises(AuthorizationError):
            o.check_as_metadata(doc, "https://auth.example")


def test_pkce_methods_may_be_required() -> None:
    doc = _metadata()
    o.check_as_metadata(doc, "https://auth.example")
    with pytest.raises(AuthorizationError, match="PKCE"):
        o.check_as_metadata(doc, "https://auth.example", require_pkce=True)
    doc["code_challenge_methods_supported"] = ["plain", "S256"]
    o.check_as_metadata(doc, "https://auth.example", require_pkce=True)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://auth.example/token", True),
        ("http://localhost:9/token", True),
        ("http://127.0.0.1/token", True),
        ("http://[::1]:8080/token", True),
        ("http://auth.example/token", False),
        ("http://localhost.evil.example/token", False),
        ("http://127.0.0.2/token", False),
    ],
)
def test_endpoints_need_tls_off_loopback(url: str, ok: bool) -> None:
    if ok:
        o.check_tls(url, "token_endpoint")
    else:
        with pytest.raises(AuthorizationError, match="https"):
            o.check_tls(url, "token_endpoint")


@pytest.mark.parametrize(
    ("params", "advertised", "ok"),
    [
        ({"iss": "https://auth.example"}, True, True),
        ({}, None, True),
        ({}, False, True),
        ({}, True, False),
        ({"iss": "https://evil.example.com"}, True, False),
        ({"iss": "https://evil.example.com"}, None, False),
        ({"iss": "https://auth.example/"}, True, False),
    ],
)
def test_check_iss(params: dict[str, str], advertised: bool | None, ok: bool) -> None:
    meta = (
        {} if advertised is None else {"authorization_response_iss_parameter_supported": advertised}
    )
    if ok:
        o.check_iss(params, "https://auth.example", meta)
    else:
        with pytest.raises(AuthorizationError):
            o.check_iss(params, "https://auth.example", meta)


# -- scopes, PKCE, tokens --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("challenged", "resource", "server", "previous", "offline", "expected"),
    [
        ("mcp:basic", ["a", "b"], None, [], False, ["mcp:basic"]),
        (None, ["a", "b"], None, [], False, ["a", "b"]),
        ("", ["a"], None, [], False, ["a"]),
        (None, None, ["x"], [], False, []),
        (None, [], None, [], False, []),
        ("mcp:write", None, None, ["mcp:basic"], False, ["mcp:basic", "mcp:write"]),
        (
            None,
            ["mcp:basic"],
            ["mcp:basic", "offline_access"],
            [],
            True,
            ["mcp:basic", "offline_access"],
        ),
        (None, ["mcp:basic"], ["mcp:basic", "offline_access"], [], False, ["mcp:basic"]),
        (None, ["mcp:basic"], ["mcp:basic"], [], True, ["mcp:basic"]),
        ("a a b", None, None, ["b"], False, ["b", "a"]),
    ],
)
def test_select_scopes(
    challenged: str | None,
    resource: list[str] | None,
    server: list[str] | None,
    previous: list[str],
    offline: bool,
    expected: list[str],
) -> None:
    assert o.select_scopes(challenged, resource, server, previous, offline=offline) == expected


def test_pkce_pair_is_s256() -> None:
    verifier, challenge = o.pkce_pair()
    assert 43 <= len(verifier) <= 128
    assert set(verifier) <= set(string.ascii_letters + string.digits + "-._~")
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert o.pkce_pair()[0] != verifier


def test_token_response() -> None:
    body = json.dumps(
        {
            "access_token": "t",
            "token_type": "bearer",
            "expires_in": 60,
            "refresh_token": "r",
            "scope": "a",
        }
    ).encode()
    assert o.parse_token_response(200, body) == o.TokenResponse("t", "Bearer", 60, "r", "a")


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (
            400,
            b'{"error": "invalid_grant", "error_description": "code used"}',
            "invalid_grant: code used",
        ),
        (401, b"<html>no</html>", "HTTP 401"),
        (200, b"[]", "not a JSON object"),
        (200, b"{", "not valid JSON"),
        (200, b'{"token_type": "Bearer"}', "no access_token"),
        (200, b'{"access_token": "t", "token_type": "DPoP"}', "token_type"),
        (200, b'{"access_token": "t", "token_type": "Bearer", "expires_in": -1}', "expires_in"),
        (200, b'{"access_token": "t", "token_type": "Bearer", "expires_in": true}', "expires_in"),
        # Tokens are VSCHARs (RFC 6749 A.12, A.17): none of these could be sent.
        (200, b'{"access_token": "a\\r\\nX-Injected: 1", "token_type": "Bearer"}', "access_token"),
        (200, b'{"access_token": "caf\\u00e9", "token_type": "Bearer"}', "access_token"),
        (200, b'{"access_token": "a\\u0000", "token_type": "Bearer"}', "access_token"),
        (
            200,
            b'{"access_token": "t", "token_type": "Bearer", "refresh_token": "r\\n"}',
            "refresh_token",
        ),
    ],
)
def test_token_errors(status: int, body: bytes, words: str) -> None:
    with pytest.raises(AuthorizationError, match=words) as refused:
        o.parse_token_response(status, body)
    assert "Injected" not in str(refused.value)  # a refused token is not quoted


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("/relative", "token_endpoint: not an absolute"),
        ("ftp://x", "token_endpoint: not an absolute"),
        ("http://[::1/x", "token_endpoint: not a valid URL"),
    ],
)
def test_an_endpoint_that_is_no_url_is_named(url: str, words: str) -> None:
    with pytest.raises(AuthorizationError, match=re.escape(words)):
        o.check_tls(url, "token_endpoint")
    with pytest.raises(AuthorizationError, match="protected resource metadata 'resource'"):
        o.check_resource(url, "https://mcp.example/mcp")


@given(st.integers(100, 599), st.binary(max_size=64))
def test_random_token_bodies_never_raise_anything_else(status: int, body: bytes) -> None:
    try:
        o.parse_token_response(status, body)
    except AuthorizationError:
        pass


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(
    [
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "code_challenge_methods_supported",
        "resource",
    ]
)


@given(
    st.dictionaries(_keys, _json | st.sampled_from(["https://auth.example", "S256"]), max_size=6),
    st.text(max_size=30) | st.just("https://auth.example"),
    st.booleans(),
)
def test_random_metadata_never_raises_anything_else(
    doc: JSONObject, issuer: str, require_pkce: bool
) -> None:
    try:
        o.check_as_metadata(doc, issuer, require_pkce=require_pkce)
        o.check_resource(doc.get("resource"), issuer)
        o.string_list(doc, "code_challenge_methods_supported")
    except AuthorizationError:
        pass


@given(st.text(max_size=40), st.text(max_size=40))
def test_random_urls_never_raise_anything_else(url: str, other: str) -> None:
    try:
        o.prm_urls(url, None)
        o.as_metadata_urls(url)
        o.check_resource(other, url)
    except AuthorizationError:
        pass


def test_form_body_leaves_none_out() -> None:
    assert o.form_body({"a": "x y", "b": None, "c": "&="}) == b"a=x+y&c=%26%3D"
