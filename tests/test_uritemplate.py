"""Tests for RFC 6570 URI Templates (``mcpwire._uritemplate``).

* Expansion is held to the RFC's own examples: every row of the section 1.2
  level 1-4 tables and of the section 3.2.1-3.2.9 tables, with the section 3.2
  variable values, reproduced here as data.
* Parse errors name the offending position.
* ``match`` is checked on the MCP shapes (path segments, ``{+path}``, query
  parameters in any order, percent-decoding, exploded segments, anchoring), on a
  round-trip property, on arbitrary input (it raises nothing but
  ``UriEscapeError``) and on hostile input (it stays linear).
* A value whose percent-escapes are malformed or not UTF-8 raises
  ``UriEscapeError`` naming the variable and the escape, both kinds alike.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire._uritemplate import UriEscapeError, UriTemplate, is_template

# --- RFC 6570 data -----------------------------------------------------------------

# Section 1.2: each level lists its own variables.
LEVEL_1_VARS: dict[str, Any] = {"var": "value", "hello": "Hello World!"}
LEVEL_2_VARS: dict[str, Any] = {**LEVEL_1_VARS, "path": "/foo/bar"}
LEVEL_3_VARS: dict[str, Any] = {**LEVEL_2_VARS, "empty": "", "x": "1024", "y": "768"}
LEVEL_4_VARS: dict[str, Any] = {
    **LEVEL_2_VARS,
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
}

SECTION_1_2: list[tuple[int, str, str]] = [
    # Level 1: simple string expansion
    (1, "{var}", "value"),
    (1, "{hello}", "Hello%20World%21"),
    # Level 2: reserved string expansion
    (2, "{+var}", "value"),
    (2, "{+hello}", "Hello%20World!"),
    (2, "{+path}/here", "/foo/bar/here"),
    (2, "here?ref={+path}", "here?ref=/foo/bar"),
    # Level 2: fragment expansion, crosshatch-prefixed
    (2, "X{#var}", "X#value"),
    (2, "X{#hello}", "X#Hello%20World!"),
    # Level 3: string expansion with multiple variables
    (3, "map?{x,y}", "map?1024,768"),
    (3, "{x,hello,y}", "1024,Hello%20World%21,768"),
    # Level 3: reserved expansion with multiple variables
    (3, "{+x,hello,y}", "1024,Hello%20World!,768"),
    (3, "{+path,x}/here", "/foo/bar,1024/here"),
    # Level 3: fragment expansion with multiple variables
    (3, "{#x,hello,y}", "#1024,Hello%20World!,768"),
    (3, "{#path,x}/here", "#/foo/bar,1024/here"),
    # Level 3: label expansion, dot-prefixed
    (3, "X{.var}", "X.value"),
    (3, "X{.x,y}", "X.1024.768"),
    # Level 3: path segments, slash-prefixed
    (3, "{/var}", "/value"),
    (3, "{/var,x}/here", "/value/1024/here"),
    # Level 3: path-style parameters, semicolon-prefixed
    (3, "{;x,y}", ";x=1024;y=768"),
    (3, "{;x,y,empty}", ";x=1024;y=768;empty"),
    # Level 3: form-style query, ampersand-separated
    (3, "{?x,y}", "?x=1024&y=768"),
    (3, "{?x,y,empty}", "?x=1024&y=768&empty="),
    # Level 3: form-style query continuation
    (3, "?fixed=yes{&x}", "?fixed=yes&x=1024"),
    (3, "{&x,y,empty}", "&x=1024&y=768&empty="),
    # Level 4: string expansion with value modifiers
    (4, "{var:3}", "val"),
    (4, "{var:30}", "value"),
    (4, "{list}", "red,green,blue"),
    (4, "{list*}", "red,green,blue"),
    (4, "{keys}", "semi,%3B,dot,.,comma,%2C"),
    (4, "{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # Level 4: reserved expansion with value modifiers
    (4, "{+path:6}/here", "/foo/b/here"),
    (4, "{+list}", "red,green,blue"),
    (4, "{+list*}", "red,green,blue"),
    (4, "{+keys}", "semi,;,dot,.,comma,,"),
    (4, "{+keys*}", "semi=;,dot=.,comma=,"),
    # Level 4: fragment expansion with value modifiers
    (4, "{#path:6}/here", "#/foo/b/here"),
    (4, "{#list}", "#red,green,blue"),
    (4, "{#list*}", "#red,green,blue"),
    (4, "{#keys}", "#semi,;,dot,.,comma,,"),
    (4, "{#keys*}", "#semi=;,dot=.,comma=,"),
    # Level 4: label expansion, dot-prefixed
    (4, "X{.var:3}", "X.val"),
    (4, "X{.list}", "X.red,green,blue"),
    (4, "X{.list*}", "X.red.green.blue"),
    (4, "X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    (4, "X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    # Level 4: path segments, slash-prefixed
    (4, "{/var:1,var}", "/v/value"),
    (4, "{/list}", "/red,green,blue"),
    (4, "{/list*}", "/red/green/blue"),
    (4, "{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    (4, "{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    (4, "{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # Level 4: path-style parameters, semicolon-prefixed
    (4, "{;hello:5}", ";hello=Hello"),
    (4, "{;list}", ";list=red,green,blue"),
    (4, "{;list*}", ";list=red;list=green;list=blue"),
    (4, "{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    (4, "{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # Level 4: form-style query, ampersand-separated
    (4, "{?var:3}", "?var=val"),
    (4, "{?list}", "?list=red,green,blue"),
    (4, "{?list*}", "?list=red&list=green&list=blue"),
    (4, "{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    (4, "{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # Level 4: form-style query continuation
    (4, "{&var:3}", "&var=val"),
    (4, "{&list}", "&list=red,green,blue"),
    (4, "{&list*}", "&list=red&list=green&list=blue"),
    (4, "{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    (4, "{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]
LEVEL_VARS = {1: LEVEL_1_VARS, 2: LEVEL_2_VARS, 3: LEVEL_3_VARS, 4: LEVEL_4_VARS}

# Section 3.2: the variables shared by every table of sections 3.2.1-3.2.9.
SECTION_3_2_VARS: dict[str, Any] = {
    "count": ("one", "two", "three"),
    "dom": ("example", "com"),
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ("red", "green", "blue"),
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

SECTION_3_2: list[tuple[str, str, str]] = [
    # 3.2.1 Variable Expansion
    ("3.2.1", "{count}", "one,two,three"),
    ("3.2.1", "{count*}", "one,two,three"),
    ("3.2.1", "{/count}", "/one,two,three"),
    ("3.2.1", "{/count*}", "/one/two/three"),
    ("3.2.1", "{;count}", ";count=one,two,three"),
    ("3.2.1", "{;count*}", ";count=one;count=two;count=three"),
    ("3.2.1", "{?count}", "?count=one,two,three"),
    ("3.2.1", "{?count*}", "?count=one&count=two&count=three"),
    ("3.2.1", "{&count*}", "&count=one&count=two&count=three"),
    # 3.2.2 Simple String Expansion: {var}
    ("3.2.2", "{var}", "value"),
    ("3.2.2", "{hello}", "Hello%20World%21"),
    ("3.2.2", "{half}", "50%25"),
    ("3.2.2", "O{empty}X", "OX"),
    ("3.2.2", "O{undef}X", "OX"),
    ("3.2.2", "{x,y}", "1024,768"),
    ("3.2.2", "{x,hello,y}", "1024,Hello%20World%21,768"),
    ("3.2.2", "?{x,empty}", "?1024,"),
    ("3.2.2", "?{x,undef}", "?1024"),
    ("3.2.2", "?{undef,y}", "?768"),
    ("3.2.2", "{var:3}", "val"),
    ("3.2.2", "{var:30}", "value"),
    ("3.2.2", "{list}", "red,green,blue"),
    ("3.2.2", "{list*}", "red,green,blue"),
    ("3.2.2", "{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("3.2.2", "{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # 3.2.3 Reserved Expansion: {+var}
    ("3.2.3", "{+var}", "value"),
    ("3.2.3", "{+hello}", "Hello%20World!"),
    ("3.2.3", "{+half}", "50%25"),
    ("3.2.3", "{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("3.2.3", "{+base}index", "http://example.com/home/index"),
    ("3.2.3", "O{+empty}X", "OX"),
    ("3.2.3", "O{+undef}X", "OX"),
    ("3.2.3", "{+path}/here", "/foo/bar/here"),
    ("3.2.3", "here?ref={+path}", "here?ref=/foo/bar"),
    ("3.2.3", "up{+path}{var}/here", "up/foo/barvalue/here"),
    ("3.2.3", "{+x,hello,y}", "1024,Hello%20World!,768"),
    ("3.2.3", "{+path,x}/here", "/foo/bar,1024/here"),
    ("3.2.3", "{+path:6}/here", "/foo/b/here"),
    ("3.2.3", "{+list}", "red,green,blue"),
    ("3.2.3", "{+list*}", "red,green,blue"),
    ("3.2.3", "{+keys}", "semi,;,dot,.,comma,,"),
    ("3.2.3", "{+keys*}", "semi=;,dot=.,comma=,"),
    # 3.2.4 Fragment Expansion: {#var}
    ("3.2.4", "{#var}", "#value"),
    ("3.2.4", "{#hello}", "#Hello%20World!"),
    ("3.2.4", "{#half}", "#50%25"),
    ("3.2.4", "foo{#empty}", "foo#"),
    ("3.2.4", "foo{#undef}", "foo"),
    ("3.2.4", "{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("3.2.4", "{#path,x}/here", "#/foo/bar,1024/here"),
    ("3.2.4", "{#path:6}/here", "#/foo/b/here"),
    ("3.2.4", "{#list}", "#red,green,blue"),
    ("3.2.4", "{#list*}", "#red,green,blue"),
    ("3.2.4", "{#keys}", "#semi,;,dot,.,comma,,"),
    ("3.2.4", "{#keys*}", "#semi=;,dot=.,comma=,"),
    # 3.2.5 Label Expansion with Dot-Prefix: {.var}
    ("3.2.5", "{.who}", ".fred"),
    ("3.2.5", "{.who,who}", ".fred.fred"),
    ("3.2.5", "{.half,who}", ".50%25.fred"),
    ("3.2.5", "www{.dom*}", "www.example.com"),
    ("3.2.5", "X{.var}", "X.value"),
    ("3.2.5", "X{.empty}", "X."),
    ("3.2.5", "X{.undef}", "X"),
    ("3.2.5", "X{.var:3}", "X.val"),
    ("3.2.5", "X{.list}", "X.red,green,blue"),
    ("3.2.5", "X{.list*}", "X.red.green.blue"),
    ("3.2.5", "X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("3.2.5", "X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("3.2.5", "X{.empty_keys}", "X"),
    ("3.2.5", "X{.empty_keys*}", "X"),
    # 3.2.6 Path Segment Expansion: {/var}
    ("3.2.6", "{/who}", "/fred"),
    ("3.2.6", "{/who,who}", "/fred/fred"),
    ("3.2.6", "{/half,who}", "/50%25/fred"),
    ("3.2.6", "{/who,dub}", "/fred/me%2Ftoo"),
    ("3.2.6", "{/var}", "/value"),
    ("3.2.6", "{/var,empty}", "/value/"),
    ("3.2.6", "{/var,undef}", "/value"),
    ("3.2.6", "{/var,x}/here", "/value/1024/here"),
    ("3.2.6", "{/var:1,var}", "/v/value"),
    ("3.2.6", "{/list}", "/red,green,blue"),
    ("3.2.6", "{/list*}", "/red/green/blue"),
    ("3.2.6", "{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("3.2.6", "{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("3.2.6", "{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # 3.2.7 Path-Style Parameter Expansion: {;var}
    ("3.2.7", "{;who}", ";who=fred"),
    ("3.2.7", "{;half}", ";half=50%25"),
    ("3.2.7", "{;empty}", ";empty"),
    ("3.2.7", "{;v,empty,who}", ";v=6;empty;who=fred"),
    ("3.2.7", "{;v,bar,who}", ";v=6;who=fred"),
    ("3.2.7", "{;x,y}", ";x=1024;y=768"),
    ("3.2.7", "{;x,y,empty}", ";x=1024;y=768;empty"),
    ("3.2.7", "{;x,y,undef}", ";x=1024;y=768"),
    ("3.2.7", "{;hello:5}", ";hello=Hello"),
    ("3.2.7", "{;list}", ";list=red,green,blue"),
    ("3.2.7", "{;list*}", ";list=red;list=green;list=blue"),
    ("3.2.7", "{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("3.2.7", "{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # 3.2.8 Form-Style Query Expansion: {?var}
    ("3.2.8", "{?who}", "?who=fred"),
    ("3.2.8", "{?half}", "?half=50%25"),
    ("3.2.8", "{?x,y}", "?x=1024&y=768"),
    ("3.2.8", "{?x,y,empty}", "?x=1024&y=768&empty="),
    ("3.2.8", "{?x,y,undef}", "?x=1024&y=768"),
    ("3.2.8", "{?var:3}", "?var=val"),
    ("3.2.8", "{?list}", "?list=red,green,blue"),
    ("3.2.8", "{?list*}", "?list=red&list=green&list=blue"),
    ("3.2.8", "{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("3.2.8", "{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # 3.2.9 Form-Style Query Continuation: {&var}
    ("3.2.9", "{&who}", "&who=fred"),
    ("3.2.9", "{&half}", "&half=50%25"),
    ("3.2.9", "?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("3.2.9", "{&x,y,empty}", "&x=1024&y=768&empty="),
    ("3.2.9", "{&var:3}", "&var=val"),
    ("3.2.9", "{&list}", "&list=red,green,blue"),
    ("3.2.9", "{&list*}", "&list=red&list=green&list=blue"),
    ("3.2.9", "{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("3.2.9", "{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]

ALL_RFC_TEMPLATES = sorted({t for _, t, _ in SECTION_1_2} | {t for _, t, _ in SECTION_3_2})


# --- expansion: the RFC tables -----------------------------------------------------


@pytest.mark.parametrize(("level", "template", "expected"), SECTION_1_2)
def test_rfc_section_1_2_examples(level: int, template: str, expected: str) -> None:
    assert UriTemplate(template).expand(LEVEL_VARS[level]) == expected


@pytest.mark.parametrize(("section", "template", "expected"), SECTION_3_2)
def test_rfc_section_3_2_examples(section: str, template: str, expected: str) -> None:
    assert UriTemplate(template).expand(SECTION_3_2_VARS) == expected


def test_rfc_tables_cover_every_operator() -> None:
    ops = {m.group(1) for t in ALL_RFC_TEMPLATES for m in re.finditer(r"\{([+#./;?&]?)", t)}
    assert ops == {"", "+", "#", ".", "/", ";", "?", "&"}
    assert {s for s, _, _ in SECTION_3_2} == {f"3.2.{i}" for i in range(1, 10)}


# --- expansion: values and encoding ------------------------------------------------


def test_expand_accepts_mapping_and_keywords() -> None:
    t = UriTemplate("{a}/{b}")
    assert t.expand({"a": "1", "b": "2"}) == "1/2"
    assert t.expand(a="1", b="2") == "1/2"
    assert t.expand({"a": "1", "b": "2"}, b="3") == "1/3"
    assert t.expand() == "/"


def test_expand_keyword_named_like_parameters() -> None:
    assert UriTemplate("{values}-{self}").expand(values="v", self="s") == "v-s"


def test_expand_stringifies_numbers() -> None:
    t = UriTemplate("{i}/{f}/{b}/{n}")
    assert t.expand(i=42, f=1.5, b=True, n=False) == "42/1.5/true/false"
    assert UriTemplate("{?page,ids*}").expand(page=2, ids=[1, 2]) == "?page=2&ids=1&ids=2"


def test_expand_dict_keeps_insertion_order() -> None:
    t = UriTemplate("{?p*}")
    assert t.expand(p={"b": "2", "a": "1"}) == "?b=2&a=1"
    assert t.expand(p={"a": "1", "b": "2"}) == "?a=1&b=2"


def test_expand_skips_none_members() -> None:
    assert UriTemplate("{/l*}").expand(l=["a", None, "b"]) == "/a/b"
    assert UriTemplate("{?d*}").expand(d={"a": None, "b": "1"}) == "?b=1"
    # All members undefined: the variable is undefined (RFC 6570 section 2.3).
    assert UriTemplate("X{.l}{?d*}").expand(l=[None], d={"a": None}) == "X"


def test_expand_rejects_unsupported_values() -> None:
    with pytest.raises(TypeError, match="'v'"):
        UriTemplate("{v}").expand(v=object())
    with pytest.raises(TypeError):
        UriTemplate("{v}").expand(v={1, 2})


@pytest.mark.parametrize("template", ["{keys:1}", "{+keys:1}", "{?list:2}"])
def test_prefix_on_composite_value_is_an_error(template: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate(template).expand(keys={"a": "b"}, list=["x"])


def test_expand_encodes_utf8() -> None:
    assert UriTemplate("{v}").expand(v="é€😀") == "%C3%A9%E2%82%AC%F0%9F%98%80"
    assert UriTemplate("{+v}").expand(v="é/x") == "%C3%A9/x"
    # A prefix counts code points, not octets.
    assert UriTemplate("{v:2}").expand(v="éé€") == "%C3%A9%C3%A9"


def test_reserved_expansion_keeps_pct_triplets() -> None:
    assert UriTemplate("{+v}").expand(v="a%20b%zz%") == "a%20b%25zz%25"
    assert UriTemplate("{#v}").expand(v="%2f") == "#%2f"
    assert UriTemplate("{v}").expand(v="a%20b") == "a%2520b"


def test_expand_encodes_bad_literals() -> None:
    # Section 3.1: literals not allowed in a URI are pct-encoded; pct-triplets stay.
    assert UriTemplate("a b/%41/50%/é{x}").expand(x="1") == "a%20b/%41/50%25/%C3%A9" + "1"


def test_expand_lone_surrogate_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        UriTemplate("{v}").expand(v="\ud800")


# --- parsing -------------------------------------------------------------------------

PARSE_ERRORS: list[tuple[str, int, str]] = [
    ("{/id*", 0, "unclosed"),
    ("/id*}", 4, "unmatched"),
    ("a{b{c}", 1, "unclosed"),
    ("{}", 0, "empty"),
    ("{/?id}", 2, "variable name"),
    ("{var:prefix}", 5, "prefix"),
    ("{var:0}", 5, "prefix"),
    ("{var:10000}", 5, "prefix"),
    ("{hello:2*}", 8, "modifier"),
    ("{??hello}", 2, "variable name"),
    ("{!hello}", 1, "reserved"),
    ("{=path}", 1, "reserved"),
    ("{|var*}", 1, "reserved"),
    ("{$var}", 1, "operator"),
    ("{~thing}", 1, "operator"),
    ("{-join|&|var,list}", 1, "operator"),
    ("{*keys?}", 1, "operator"),
    ("{?empty=default,var}", 7, "unexpected"),
    ("{;keys:1*}", 8, "modifier"),
    ("/h{#hello+}", 9, "unexpected"),
    ("x{?empty|foo=none}", 8, "unexpected"),
    ("/resolution{?x, y}", 15, "variable name"),
    ("{default-graph-uri}", 8, "unexpected"),
    ("{a..b}", 2, "unexpected"),
    ("{a.}", 2, "unexpected"),
    ("{.}", 2, "variable name"),
    ("{x,}", 3, "variable name"),
    ("{x,,y}", 3, "variable name"),
    ("{with space}", 5, "unexpected"),
    ("{ x}", 1, "operator"),
    ("/sparql{?query){&default-graph-uri*}", 7, "unclosed"),
]


@pytest.mark.parametrize(("template", "position", "what"), PARSE_ERRORS)
def test_parse_errors_name_the_position(template: str, position: int, what: str) -> None:
    with pytest.raises(ValueError, match=f"{what}.* at position {position}$"):
        UriTemplate(template)


@pytest.mark.parametrize(
    "template", ["", "plain", "{a%20b}", "{a.b}", "{x:9999}", "{x_1,Y2*}", "/vars/:var"]
)
def test_valid_templates_parse(template: str) -> None:
    assert UriTemplate(template).template == template


def test_lone_surrogate_in_template_is_a_parse_error() -> None:
    with pytest.raises(ValueError, match=r"surrogate.* at position 2$"):
        UriTemplate("ab\ud800{x}")


def test_template_must_be_a_string() -> None:
    with pytest.raises(TypeError):
        UriTemplate(b"{x}")  # type: ignore[arg-type]


def test_variables_in_order_without_repeats() -> None:
    t = UriTemplate("{b}/{a,c*}{?b,d:3}{#e}")
    assert t.variables == ("b", "a", "c", "d", "e")
    assert UriTemplate("static").variables == ()


def test_identity_and_repr() -> None:
    a, b, c = UriTemplate("x/{y}"), UriTemplate("x/{y}"), UriTemplate("x/{z}")
    assert a == b
    assert hash(a) == hash(b)
    assert a != c
    assert a != "x/{y}"
    assert len({a, b, c}) == 2
    assert repr(a) == "UriTemplate('x/{y}')"
    assert str(a) == "x/{y}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("file:///{+path}", True),
        ("users://{user}/posts{?limit}", True),
        ("{x}", True),
        ("a{b", False),
        ("file:///etc/hosts", False),
        ("{}", False),
        ("{ x }", False),
        ("{x}}", True),
        ("", False),
    ],
)
def test_is_template(text: str, expected: bool) -> None:
    assert is_template(text) is expected


# --- matching ----------------------------------------------------------------------

MATCHES: list[tuple[str, str, dict[str, Any] | None]] = [
    # one segment
    ("test://template/{id}/data", "test://template/42/data", {"id": "42"}),
    ("test://template/{id}/data", "test://template/4/2/data", None),
    ("test://template/{id}/data", "test://template/42/data/", None),
    ("test://template/{id}/data", "xtest://template/42/data", None),
    ("test://template/{id}/data", "test://template/42/dat", None),
    ("test://template/{id}/data", "test://template/42?x/data", None),
    ("test://template/{id}/data", "test://template/42#x/data", None),
    ("test://template/{id}/data", "TEST://template/42/data", None),
    ("test://template/{id}/data", "test://template//data", {"id": ""}),
    ("weather://{city}/current", "weather://S%C3%A3o%20Paulo/current", {"city": "São Paulo"}),
    ("weather://{city}/current", "weather://a%2Fb/current", {"city": "a/b"}),
    ("mail://{user}@{host}", "mail://ada@example.com", {"user": "ada", "host": "example.com"}),
    ("mail://{user}@{host}", "mail://a@b@c", {"user": "a", "host": "b@c"}),
    # reserved expansion spans segments
    ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
    ("file:///{+path}", "file:///", {"path": ""}),
    ("file:///{+path}", "file:///a%20b/c", {"path": "a b/c"}),
    ("file:///{+path}", "file:///a#frag", None),
    ("file:///{+path}", "file://a/b", None),
    ("{+path}/here", "/foo/bar/here", {"path": "/foo/bar"}),
    ("{+path}/here", "a/here/b/here", {"path": "a/here/b"}),
    ("{+dir}/{name}", "a/b/c.txt", {"dir": "a/b", "name": "c.txt"}),
    ("{+a}/{b}/{c}", "p/q/y/z", {"a": "p/q", "b": "y", "c": "z"}),
    (
        "repo://{owner}/{repo}/blob/{+path}",
        "repo://o/r/blob/x/y",
        {"owner": "o", "repo": "r", "path": "x/y"},
    ),
    ("repo://{owner}/{repo}/blob/{+path}", "repo://o/r/tree/x/y", None),
    ("repo://{owner}/{repo}/{+path}", "repo://o/r/x/y", {"owner": "o", "repo": "r", "path": "x/y"}),
    ("docs://{name}.{ext}", "docs://a.tar.gz", {"name": "a.tar", "ext": "gz"}),
    ("docs://{name}.md", "docs://v1.2.md", {"name": "v1.2"}),
    ("docs://{name}.md", "docs://x.md.md", {"name": "x.md"}),
    ("docs://{name}.md", "docs://x.txt", None),
    # fragment
    ("page{#section}", "page#intro", {"section": "intro"}),
    ("page{#section}", "page", {}),
    ("page{#a,b}", "page#x,y", {"a": "x", "b": "y"}),
    ("{+p}{#f}", "/a/b#c/d", {"p": "/a/b", "f": "c/d"}),
    # labels
    ("X{.var}", "X.value", {"var": "value"}),
    ("X{.x,y}", "X.1024.768", {"x": "1024", "y": "768"}),
    ("X{.x,y}", "X.1024", {"x": "1024"}),
    ("X{.x,y}", "X", {}),
    ("www{.dom*}", "www.example.com", {"dom": ["example", "com"]}),
    # path segments
    ("{/var}", "/value", {"var": "value"}),
    ("{/var,x}/here", "/value/1024/here", {"var": "value", "x": "1024"}),
    ("{/var,x}/here", "/value/here", {"var": "value"}),
    ("s://x{/segments*}", "s://x/a/b/c", {"segments": ["a", "b", "c"]}),
    ("s://x{/segments*}", "s://x/a%2Fb/%20", {"segments": ["a/b", " "]}),
    ("s://x{/segments*}", "s://x", {}),
    ("s://x{/segments*}", "s://x/", {"segments": [""]}),
    ("{/list*}/end", "/a/b/end", {"list": ["a", "b"]}),
    ("{/list*,path:4}", "/red/green", {"list": ["red", "green"]}),
    # path-style parameters
    ("{;x,y}", ";x=1024;y=768", {"x": "1024", "y": "768"}),
    ("{;x,y,empty}", ";x=1024;y=768;empty", {"x": "1024", "y": "768", "empty": ""}),
    ("{;x,y}", ";y=768", {"y": "768"}),
    ("{;x,xy}", ";xy=1", {"xy": "1"}),
    ("{;x,y}", ";y=1;x=2", None),  # path parameters keep template order
    ("{;list*}", ";list=red;list=green", {"list": ["red", "green"]}),
    ("{;list*}", ";list;list=b", {"list": ["", "b"]}),
    # prefix modifiers bound the length of what matches
    ("{var:3}", "val", {"var": "val"}),
    ("{var:3}", "value", None),
    ("{var:3}", "%C3%A9%C3%A9%C3%A9", {"var": "ééé"}),
    ("{?q:2}", "?q=abc", None),
    # simple multi-variable expressions fill left to right
    ("map?{x,y}", "map?1024,768", {"x": "1024", "y": "768"}),
    ("map?{x,y}", "map?1024", {"x": "1024"}),
    ("{list}", "red,green,blue", {"list": "red,green,blue"}),
    ("{list*}", "red,green,blue", {"list": ["red", "green", "blue"]}),
    # a repeated variable must agree with itself
    ("{x}/{x}", "a/a", {"x": "a"}),
    ("{x}/{x}", "a/b", None),
    ("{x}{?x}", "a?x=a", {"x": "a"}),
    ("{x}{?x}", "a?x=b", None),
    ("{/var:1,var}", "/v/value", {"var": "value"}),
    ("{/var:1,var}", "/w/value", None),
    ("{/var:1,var}", "/v", {"var": "v"}),
    ("{a:2}-{a:4}", "ab-abcd", {"a": "abcd"}),
    ("{a:2}-{a:4}", "ab-ab", {"a": "ab"}),
    ("{a:2}-{a:4}", "ab-a", None),
    # literal-only templates
    ("static://thing", "static://thing", {}),
    ("static://thing", "static://thing2", None),
    ("a b", "a%20b", {}),
]


@pytest.mark.parametrize(("template", "uri", "expected"), MATCHES)
def test_match(template: str, uri: str, expected: dict[str, Any] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


QUERY_TEMPLATE = "users://{user}/posts{?limit,offset}"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("users://ada/posts?limit=10&offset=5", {"user": "ada", "limit": "10", "offset": "5"}),
        ("users://ada/posts?offset=5&limit=10", {"user": "ada", "limit": "10", "offset": "5"}),
        ("users://ada/posts?limit=10", {"user": "ada", "limit": "10"}),
        ("users://ada/posts?offset=5", {"user": "ada", "offset": "5"}),
        ("users://ada/posts", {"user": "ada"}),
        ("users://ada/posts?", {"user": "ada"}),
        ("users://ada/posts?limit=", {"user": "ada", "limit": ""}),
        ("users://ada/posts?limit", {"user": "ada", "limit": ""}),
        ("users://ada/posts?limit=a%26b%3Dc", {"user": "ada", "limit": "a&b=c"}),
        ("users://ada/posts?limit=1&&offset=2", {"user": "ada", "limit": "1", "offset": "2"}),
        ("users://ada/posts?limit=1&limit=2", None),  # not an exploded variable
        ("users://ada/posts?limit=1&page=2", None),  # not a template variable
        ("users://ada/posts?limit=1#top", None),
        ("users://ada/post?limit=1", None),
        ("users://a/b/posts?limit=1", None),
    ],
)
def test_match_query_in_any_order(uri: str, expected: dict[str, Any] | None) -> None:
    assert UriTemplate(QUERY_TEMPLATE).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("?fixed=yes{&x}", "?fixed=yes&x=1024", {"x": "1024"}),
        ("?fixed=yes{&x}", "?x=1024&fixed=yes", {"x": "1024"}),
        ("?fixed=yes{&x}", "?fixed=yes", {}),
        ("?fixed=yes{&x}", "?x=1024", None),
        ("?fixed=yes{&x}", "?fixed=no&x=1", None),
        ("search{?q}{&tags*}", "search?tags=a&q=x&tags=b", {"q": "x", "tags": ["a", "b"]}),
        ("{+path}{?ref}", "src/main.py?ref=v1", {"path": "src/main.py", "ref": "v1"}),
        ("{+path}{?ref}", "src/main.py", {"path": "src/main.py"}),
        ("s://x{?a%2Eb}", "s://x?a%2Eb=1", {"a%2Eb": "1"}),
        ("s://x{?a%2Eb}", "s://x?a.b=1", {"a%2Eb": "1"}),
        ("{?x,y}&z=1", "?z=1&y=2", {"y": "2"}),
        # a query expression that is not at the end is matched in template order
        ("{?q}/more", "?q=1/more", {"q": "1"}),
        ("{?a,b}{#f}", "?b=2#top", {"b": "2", "f": "top"}),
        ("{?a,b}{#f}", "?a=1&b=2", {"a": "1", "b": "2"}),
        ("{&a}{?b}", "&a=1?b=2", {"a": "1", "b": "2"}),
    ],
)
def test_match_query_forms(template: str, uri: str, expected: dict[str, Any] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("section", "template", "expansion"),
    [row for row in SECTION_3_2 if "keys" not in row[1]],
)
def test_rfc_expansions_match_back(section: str, template: str, expansion: str) -> None:
    """Every RFC 3.2 expansion (except associative arrays) is matched by its template,
    and what comes back expands to a URI that matches back to the same values."""
    t = UriTemplate(template)
    result = t.match(expansion)
    assert result is not None
    assert t.match(t.expand(result)) == result


# --- percent-escapes ---------------------------------------------------------------

# (template, uri, variable, escape): a URI of the template's shape whose value
# holds a malformed escape or escapes that are not UTF-8.
BAD_ESCAPES: list[tuple[str, str, str, str]] = [
    ("weather://{city}/current", "weather://%ZZ/current", "city", "%ZZ"),
    ("weather://{city}/current", "weather://100%/current", "city", "%"),
    ("weather://{city}/current", "weather://a%4/current", "city", "%4"),
    ("weather://{city}/current", "weather://%FF/current", "city", "%FF"),
    ("weather://{city}/current", "weather://S%C3%A3o%C3%28/current", "city", "%C3"),
    ("weather://{city}/current", "weather://%E2%82/current", "city", "%E2%82"),
    ("weather://{city}/current", "weather://%ED%A0%80/current", "city", "%ED"),
    ("file:///{+path}", "file:///a/%zz/b", "path", "%zz"),
    ("file:///{+path}", "file:///a/%80", "path", "%80"),
    ("s://x{/segments*}", "s://x/ok/%G0", "segments", "%G0"),
    ("{;list*}", ";list=a;list=%FE", "list", "%FE"),
    ("{;x,y}", ";x=1;y=%", "y", "%"),
    (QUERY_TEMPLATE, "users://ada/posts?limit=%FF", "limit", "%FF"),
    (QUERY_TEMPLATE, "users://ada/posts?offset=1&limit=5%", "limit", "%"),
    ("q://x{?tags*}", "q://x?tags=a&tags=%C0%AF", "tags", "%C0"),
]


@pytest.mark.parametrize(("template", "uri", "variable", "escape"), BAD_ESCAPES)
def test_malformed_and_non_utf8_escapes_raise_alike(
    template: str, uri: str, variable: str, escape: str
) -> None:
    with pytest.raises(UriEscapeError) as info:
        UriTemplate(template).match(uri)
    assert info.value.variable == variable
    assert info.value.escape == escape
    assert isinstance(info.value, ValueError)
    assert f"URI template variable {variable!r} holds" in str(info.value)
    assert repr(escape) in str(info.value)


def test_escape_error_messages() -> None:
    with pytest.raises(UriEscapeError) as malformed:
        UriTemplate("w://{city}").match("w://%ZZ")
    assert str(malformed.value) == (
        "the value of URI template variable 'city' holds '%ZZ', which is not a "
        "percent-escape ('%' and two hex digits)"
    )
    with pytest.raises(UriEscapeError) as not_utf8:
        UriTemplate("w://{city}").match("w://%FF")
    assert str(not_utf8.value) == (
        "the value of URI template variable 'city' holds the percent-escape(s) '%FF', "
        "which do not decode as UTF-8"
    )


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        # Not the template's shape: no match, whatever the escapes.
        ("weather://{city}/current", "weather://%ZZ/forecast"),
        ("weather://{city}/current", "other://%FF/current"),
        (QUERY_TEMPLATE, "users://ada/posts?page=%FF"),  # an unknown key
        (QUERY_TEMPLATE, "users://ada/posts?%FF=1"),  # a key that does not decode
        (QUERY_TEMPLATE, "users://ada/posts?limit=1&limit=%FF"),  # a repeated scalar
        ("?fixed=yes{&x}", "?x=%ZZ"),  # the literal pair is missing
    ],
)
def test_bad_escapes_outside_the_shape_are_no_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


# --- properties --------------------------------------------------------------------

UNRESERVED = string.ascii_letters + string.digits + "-._~"
RESERVED = ":/?#[]@!$&'()*+,;="
# Anything encodable as UTF-8 (no lone surrogates).
any_text = st.text(st.characters(codec="utf-8"), max_size=12)
# Values for {+var}: unreserved, the reserved characters it passes through (but not
# '#', which starts the fragment, nor '%', which could form a pct-triplet), and
# characters it encodes.
plus_text = st.text(st.sampled_from(UNRESERVED + "/:@!$&'()*+,;=[] é"), max_size=12)
no_dot_text = st.text(st.characters(codec="utf-8", exclude_characters="."), max_size=8)
texts_list = st.lists(any_text, min_size=1, max_size=4)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


ROUND_TRIP_SHAPES: list[tuple[str, dict[str, st.SearchStrategy[Any]]]] = [
    ("test://template/{id}/data", {"id": any_text}),
    ("mail://{user}@{host}:{port}", {"user": any_text, "host": any_text, "port": any_text}),
    (
        "users://{user}/posts{?limit,offset}",
        {"user": any_text, "limit": optional(any_text), "offset": optional(any_text)},
    ),
    ("file:///{+path}", {"path": plus_text}),
    ("{+path}/raw", {"path": plus_text}),
    ("{+dir}/{name}", {"dir": plus_text, "name": any_text}),
    ("git://{+repo}/{ref}/{file}", {"repo": plus_text, "ref": any_text, "file": any_text}),
    (
        "{+path}{?ref}",
        {
            "path": st.text(st.sampled_from(UNRESERVED + "/:@,;="), max_size=9),
            "ref": optional(any_text),
        },
    ),
    ("page{#section}", {"section": optional(plus_text)}),
    ("{x,y}", {"x": any_text, "y": optional(any_text)}),
    (
        "{/a,b}{;c,d}",
        {"a": any_text, "b": optional(any_text), "c": optional(any_text), "d": optional(any_text)},
    ),
    ("X{.a,b}", {"a": no_dot_text, "b": optional(no_dot_text)}),
    ("docs://{name}.{ext}", {"name": any_text, "ext": no_dot_text}),
    ("s://x{/segments*}", {"segments": optional(texts_list)}),
    ("s://x{.labels*}", {"labels": st.lists(no_dot_text, min_size=1, max_size=4)}),
    ("{;list*}", {"list": texts_list}),
    # (An undefined {?tags*} followed by {&n} would expand without the "?".)
    ("q://x{?tags*}{&n}", {"tags": texts_list, "n": optional(any_text)}),
    ("?fixed=yes{&x,y}", {"x": optional(any_text), "y": optional(any_text)}),
]


@st.composite
def shape_and_values(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    template, strategies = draw(st.sampled_from(ROUND_TRIP_SHAPES))
    return template, {name: draw(strategy) for name, strategy in strategies.items()}


@given(shape_and_values())
def test_round_trip(case: tuple[str, dict[str, Any]]) -> None:
    template, values = case
    t = UriTemplate(template)
    uri = t.expand(values)
    expected = {k: v for k, v in values.items() if v is not None}
    assert t.match(uri) == expected, uri


@given(st.binary(max_size=12), st.sampled_from(["{x}", "{+x}", "{/x}", "{;x}", "{?x}"]))
def test_escaped_octets_decode_as_utf8_or_raise(octets: bytes, template: str) -> None:
    """Values are percent-decoded as UTF-8: any octets, escaped, come back as their
    UTF-8 text, or raise naming escapes that are there; never pass through raw."""
    t = UriTemplate(template)
    escaped = "".join(f"%{b:02X}" for b in octets)
    prefix = {"{x}": "", "{+x}": "", "{/x}": "/", "{;x}": ";x=", "{?x}": "?x="}[template]
    try:
        text = octets.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(UriEscapeError) as info:
            t.match(prefix + escaped)
        assert info.value.variable == "x" and info.value.escape in escaped
        return
    assert t.match(prefix + escaped) == {"x": text}


@given(shape_and_values(), st.sampled_from(["%", "%Z", "%zz", "%FF", "%C3"]))
def test_a_bad_escape_in_an_expanded_value_raises(
    case: tuple[str, dict[str, Any]], bad: str
) -> None:
    """Expand, then spoil the first value's encoding: the match names that variable."""
    template, values = case
    t = UriTemplate(template)
    name = next((n for n in t.variables if isinstance(values.get(n), str)), None)
    if name is None or template.startswith("?") or "{?" in template:
        return
    token = "QQ"  # unreserved: expands as itself
    uri = t.expand({**values, name: token})
    if uri.count(token) != 1:
        return
    spoiled = uri.replace(token, token + bad)
    result = _match_or_escape_error(t, spoiled)
    if isinstance(result, UriEscapeError):
        assert result.variable == name
    else:  # only when a reserved expansion reads the "%" as part of its own value
        assert result is None or "%" in str(result)


MATCH_TEMPLATES = [
    *ALL_RFC_TEMPLATES,
    *{t for t, _ in ROUND_TRIP_SHAPES},
    *{t for t, _, _ in MATCHES},
    QUERY_TEMPLATE,
    "{+a}.{b}/{c}",
    "{a}{b}{c}",
    "{?a}{&a*}",
    "{var:3}{+x:2}",
]
hostile_text = st.text(st.sampled_from("/?#&=;.,%:@*+aZ0é\n\x00\ud800"), max_size=40)


def _match_or_escape_error(template: UriTemplate, uri: str) -> object:
    """What ``match`` gives: values, None, or the ``UriEscapeError`` it raised."""
    try:
        return template.match(uri)
    except UriEscapeError as exc:
        error = exc
    assert error.variable in template.variables
    assert error.escape.startswith("%") and error.escape in uri
    return error


@given(st.sampled_from(MATCH_TEMPLATES), st.text() | hostile_text)
def test_match_raises_only_escape_errors(template: str, uri: str) -> None:
    result = _match_or_escape_error(UriTemplate(template), uri)
    assert result is None or isinstance(result, (dict, UriEscapeError))


@given(st.text(st.characters(exclude_categories=())))
def test_match_raises_only_escape_errors_on_surrogates(uri: str) -> None:
    for template in ("{x}", "{+x}{?q}", "{/x*}", "?fixed=yes{&q}"):
        _match_or_escape_error(UriTemplate(template), uri + "%")


scalar_values = any_text | st.integers() | st.floats(allow_nan=False)
composite_values = st.lists(any_text, max_size=3) | st.dictionaries(any_text, any_text, max_size=3)
PCT_OK = re.compile(r"%[0-9A-F]{2}")


@given(
    st.sampled_from(["", ".", "/", ";", "?", "&"]),
    any_text,
    st.lists(any_text, max_size=3),
    st.dictionaries(any_text, any_text, max_size=3),
    scalar_values,
)
def test_unreserved_expansion_stays_in_charset(
    op: str, s: str, items: list[str], pairs: Mapping[str, str], p: object
) -> None:
    out = UriTemplate(f"{{{op}s,l*,m,d,p:3}}").expand(s=s, l=items, m=items, d=pairs, p=p)
    structure = set("%,=") | set({"?": "?&"}.get(op, op))
    assert set(out) <= set(UNRESERVED) | structure, out
    assert "%" not in PCT_OK.sub("", out), out


@given(st.sampled_from(["+", "#"]), any_text, composite_values)
def test_reserved_expansion_stays_in_charset(op: str, s: str, c: object) -> None:
    out = UriTemplate(f"{{{op}s,c}}").expand(s=s, c=c)
    assert set(out) <= set(UNRESERVED + RESERVED + "%"), out
    assert "%" not in re.sub(r"%[0-9A-Fa-f]{2}", "", out), out


# --- linear time -------------------------------------------------------------------

N = 100_000
HOSTILE: list[tuple[str, str]] = [
    ("{name}.{ext}", "a." * N + "/"),
    ("{+a}/{b}/{c}", "a/" * N + "#"),
    ("{+a}/x/{b}", "/x/" * N + "#"),
    ("{+a}x{b}/", "x" * 2 * N),
    ("{a}:{b}:{c}x", "a:" * N),
    ("{/list*}/end", "/a" * N),
    ("X{.a,b}{.c}x", "X" + "." * 2 * N),
    ("{x,y,z}", "," * 2 * N + "/"),
    ("{+a},{+b},{+c}.", "," * 2 * N),
    ("{;x,y}", ";x=" * N),
    ("{+a}{+b}{+c}", "a" * 2 * N + "#"),
    ("{?x,y}/z", "?x=" * N),
    ("{#a,b}/x", "#" + ",/" * N),
    ("{+a}/{b}.{c}.{d}x", "/" + "." * 2 * N),
    ("x{?q}", "x?" + "q=a&" * N),
    ("users://{user}/posts{?limit,offset}", "users://" + "a" * N + "/posts?" + "&" * N),
]


@pytest.mark.parametrize(("template", "uri"), HOSTILE)
def test_match_is_linear_on_hostile_input(template: str, uri: str) -> None:
    t = UriTemplate(template)
    start = time.perf_counter()
    t.match(uri)
    # A quadratic matcher needs minutes here; a linear one, milliseconds.
    assert time.perf_counter() - start < 1.0
