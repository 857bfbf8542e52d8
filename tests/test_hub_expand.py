"""The hub's config reader: JSON with comments and ``${VAR}`` expansion, property-based.

``read_jsonc`` must give back any JSON value however its text is dressed with
whitespace, ``//`` and ``/* */`` comments and trailing commas, and keep comment
markers that sit inside strings. Blanking comments must keep every character's
line and column, so that a syntax error points where the user's editor does.

``Expander.expand`` must substitute each reference exactly once: a variable's
value is used as it is, never expanded again, whatever it holds (``${...}``,
``$NAME``, ``${input:x}``). With ``bare`` (gemini-cli's ``$VAR``) that held only
for values without ``$`` before this test. A ``${`` that is never closed is an
error, like any other ``${...}`` the expander cannot resolve.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import json_values, texts

from mcpwire._hub_expand import Expander, InputVariable, _strip_jsonc, read_jsonc

# -- JSON with comments -------------------------------------------------------------------------

_fillers = st.lists(
    st.one_of(
        st.sampled_from([" ", "\n", "\t", "\r\n"]),
        texts.map(lambda t: "//" + re.sub(r"[\r\n\u2028\u2029]", " ", t) + "\n"),
        texts.map(lambda t: "/*" + t.replace("*/", "* /") + "*/"),
    ),
    max_size=2,
).map("".join)


def _dress(value: Any, data: st.DataObject) -> str:
    """``value`` as JSON text with fillers between tokens and, sometimes, trailing commas."""

    def gap() -> str:
        return data.draw(_fillers)

    if isinstance(value, list):
        items = [gap() + _dress(v, data) + gap() for v in value]
        trailing = "," + gap() if items and data.draw(st.booleans()) else ""
        return "[" + gap() + ",".join(items) + trailing + "]"
    if isinstance(value, dict):
        members = [
            gap() + json.dumps(k) + gap() + ":" + gap() + _dress(v, data) + gap()
            for k, v in value.items()
        ]
        trailing = "," + gap() if members and data.draw(st.booleans()) else ""
        return "{" + gap() + ",".join(members) + trailing + "}"
    return json.dumps(value)


@given(value=json_values, data=st.data())
@example(value={"a // b": "/* c */", "d": ["e,]"]}, data=None)
def test_any_json_dressed_in_comments_and_trailing_commas_reads_back(
    value: Any, data: st.DataObject | None
) -> None:
    if data is None:  # the explicit example: comment markers and ",]" inside strings
        text = json.dumps(value)
    else:
        text = _dress(value, data) + data.draw(_fillers)
    parsed, duplicates = read_jsonc(text)
    assert parsed == value
    assert duplicates == []


@given(text=st.text())
@example(text='{"a": 1, // x\n "b": /* y\n z */ [2,],}')
@example(text='"unterminated \\')
def test_blanking_comments_keeps_every_line_and_column(text: str) -> None:
    blanked = _strip_jsonc(text)
    assert len(blanked) == len(text)
    assert [i for i, c in enumerate(blanked) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]


@given(
    before=st.lists(st.sampled_from(["// note\n", "/* a\nb */", " ", "\n"]), max_size=4),
    bad=st.sampled_from(["[1 2]", '{"a" 1}', "[1,,]", "{,}", "nul"]),
)
def test_a_syntax_error_after_comments_points_where_the_editor_does(
    before: list[str], bad: str
) -> None:
    text = "".join(before) + bad
    plain = "".join(re.sub(r"[^\n]", " ", piece) for piece in before) + bad
    with pytest.raises(json.JSONDecodeError) as ours:
        read_jsonc(text)
    with pytest.raises(json.JSONDecodeError) as reference:
        json.loads(plain)
    assert (ours.value.lineno, ours.value.colno) == (reference.value.lineno, reference.value.colno)


def test_duplicate_keys_are_reported_and_the_last_value_kept() -> None:
    value, duplicates = read_jsonc('{"a": 1, "b": {"c": 2, "c": 3}, "a": 4}')
    assert value == {"a": 4, "b": {"c": 3}}
    assert sorted(duplicates) == ["a", "c"]


# -- ${VAR} expansion ---------------------------------------------------------------------------

_names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,5}", fullmatch=True)
#: Variable values: anything, and often what would be a reference if expanded again.
_values = st.one_of(
    texts,
    st.sampled_from(["${HOME}", "$HOME", "${input:secret}", "${NOPE}", "${", "$", "}", ""]),
)
#: Literal text of a template: no ``$`` (that would be a reference of its own).
_literals = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="$"), max_size=6)
_defaults = _literals.map(lambda t: t.replace("}", ""))


@st.composite
def _templates(draw: st.DrawFn, bare: bool) -> tuple[str, str, dict[str, str]]:
    """(template, what it expands to, environment)."""
    environ = draw(st.dictionaries(_names, _values, max_size=4))
    template, expected = "", ""
    name_chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
    after_bare = False  # the template ends with a bare reference: no name character next
    for _ in range(draw(st.integers(0, 5))):
        literal = draw(_literals)
        kinds = ["literal", "default"] + (["var", "env"] if environ else [])
        if bare and environ:
            kinds.append("bare")
        kind = draw(st.sampled_from(kinds))
        if kind == "literal":
            if after_bare:
                literal = literal.lstrip(name_chars)
                after_bare = not literal
            template, expected = template + literal, expected + literal
            continue
        after_bare = False
        if kind == "default":
            name, default = draw(_names), draw(_defaults)
            template += f"${{{name}:-{default}}}"
            expected += environ.get(name) or default
        else:
            name = draw(st.sampled_from(sorted(environ)))
            template += {"var": f"${{{name}}}", "env": f"${{env:{name}}}", "bare": f"${name}"}[kind]
            expected += environ[name]
            if kind == "bare":  # what follows must not lengthen the name
                literal = literal.lstrip(name_chars)
                after_bare = not literal
        template, expected = template + literal, expected + literal
    return template, expected, environ


@given(case=_templates(bare=False))
@example(case=("${A}", "${B}", {"A": "${B}", "B": "x"}))
def test_each_reference_is_replaced_once_by_its_value(
    case: tuple[str, str, dict[str, str]],
) -> None:
    template, expected, environ = case
    assert Expander(environ, Path("/w")).expand(template) == expected


@given(case=_templates(bare=True))
@example(case=("$A", "${B}", {"A": "${B}", "B": "x"}))
@example(case=("$A-${B}", "$B-x", {"A": "$B", "B": "x"}))
@example(case=("$A", "${input:secret}", {"A": "${input:secret}"}))
@example(case=("$A-0", "-0", {"A": ""}))
def test_bare_references_are_replaced_once_too(case: tuple[str, str, dict[str, str]]) -> None:
    template, expected, environ = case
    assert Expander(environ, Path("/w"), bare=True).expand(template) == expected


@pytest.mark.parametrize("bare", [False, True])
@pytest.mark.parametrize(
    ("template", "rule"),
    [
        ("${MISSING}", "MISSING is not set"),
        ("${env:MISSING}", "MISSING is not set"),
        ("${9X}", "not a supported variable"),
        ("${X Y:-d}", "is not a variable name"),
        ("${}", "not a supported variable"),
        ("x ${OPEN", "is never closed"),
        ("${A}${", "is never closed"),
        ("${MISSING:-${A}}", "nested variables are not supported"),
        ("${A:-${MISSING}}", "nested variables are not supported"),
        ("x${A:-pre${A}post}", "nested variables are not supported"),
    ],
)
def test_what_cannot_be_resolved_is_an_error_naming_it(
    template: str, rule: str, bare: bool
) -> None:
    with pytest.raises(KeyError) as caught:
        Expander({"A": "a"}, Path("/w"), bare=bare).expand(template)
    assert rule in caught.value.args[0]


def test_input_variables_are_reported_not_expanded() -> None:
    with pytest.raises(InputVariable) as caught:
        Expander({}, Path("/w")).expand("--key=${input:api-key}")
    assert caught.value.name == "api-key"


def test_editor_variables_come_from_the_workspace_unless_the_environment_sets_them() -> None:
    expander = Expander({}, Path("/w"))
    assert expander.expand("${workspaceFolder}/x") == str(Path("/w")) + "/x"
    assert Expander({"workspaceFolder": "/e"}, Path("/w")).expand("${workspaceFolder}") == "/e"
