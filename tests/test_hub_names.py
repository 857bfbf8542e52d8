"""Exposed tool names (pain point 11) and tool selection (pain point 10), without I/O.

The scheme ``{server}{sep}{tool}`` must be injective, fit a provider's rule,
be stable (independent of connection order), refuse server names containing
the separator, and refuse collisions loudly instead of overwriting.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import NameRule
from mcpwire._hub_names import (
    NAME_PROFILES,
    NameTable,
    crossed_thresholds,
    expose,
    may_name,
    name_overlap,
    resolve_rule,
    tool_selected,
)

OPENAI = NAME_PROFILES["openai"]
GEMINI = NAME_PROFILES["gemini"]


def test_a_name_that_fits_is_used_as_is() -> None:
    assert expose("github", "search_repos", "__", OPENAI) == "github__search_repos"
    assert expose("my-server", "get-file", "__", OPENAI) == "my-server__get-file"


def test_disallowed_characters_are_replaced_and_a_stable_hash_added() -> None:
    name = expose("my.server", "read file", "__", OPENAI)
    assert re.fullmatch(r"my_server__read_file_[0-9a-f]{8}", name)
    assert name == expose("my.server", "read file", "__", OPENAI)  # stable
    # Sanitizing alone is not injective; the hash (of the original names) is.
    assert expose("my_server", "read_file", "__", OPENAI) == "my_server__read_file"
    assert expose("my.server", "read.file", "__", OPENAI) != name


def test_long_names_are_cut_to_64_with_the_hash() -> None:
    tool = "list_all_the_repositories_of_an_organization_including_archived_ones"
    name = expose("github-enterprise", tool, "__", OPENAI)
    assert len(name) == 64 and OPENAI.matches(name)
    assert name.startswith("github-enterprise__list_all_the_repositories")
    other = expose("github-enterprise", tool + "_and_forks", "__", OPENAI)
    assert other != name and len(other) == 64


def test_gemini_profile_first_character_and_extra_characters() -> None:
    assert expose("docs", "search.v2", "__", GEMINI) == "docs__search.v2"  # dots allowed
    name = expose("1password", "get", "__", GEMINI)
    assert name.startswith("_1password__get_") and GEMINI.matches(name)
    assert not OPENAI.matches("docs__search.v2")


def test_profiles_and_patterns() -> None:
    assert resolve_rule("anthropic").pattern == r"^[a-zA-Z0-9_-]{1,64}$"
    assert resolve_rule("default") is NAME_PROFILES["default"]
    rule = resolve_rule(r"^[a-z_][a-z0-9_]{0,31}$")
    assert (rule.first, rule.allowed, rule.max_length) == ("a-z_", "a-z0-9_", 32)
    name = expose("GitHub", "Search", "__", rule)
    assert rule.matches(name) and len(name) <= 32
    with pytest.raises(ValueError, match="cannot derive a name rule"):
        resolve_rule(r"^\w+$")
    custom = NameRule(r"^[A-Z]{1,10}$", "A-Z")
    with pytest.raises(ValueError, match="allows none of"):
        expose("a", "b", "__", custom)


def test_server_names_with_the_separator_are_refused() -> None:
    table = NameTable("__", OPENAI)
    assert table.check_server_name("ok-server") is None
    reason = table.check_server_name("my__server")
    assert reason is not None and "separator '__'" in reason and "ambiguous" in reason
    assert table.check_server_name("") is not None
    assert NameTable(".", GEMINI).check_server_name("a.b") is not None


def test_collisions_are_refused_and_name_both_sides() -> None:
    table = NameTable("__", OPENAI)
    hashed = expose("s.x", "echo", "__", OPENAI)
    got, refused = table.assign("s.x", ["echo"])
    assert got == {"echo": hashed} and refused == []
    # A server whose raw name equals that hashed name:
    literal_tool = hashed[len("s_x__") :]
    got, refused = table.assign("s_x", [literal_tool, "other"])
    assert got == {"other": "s_x__other"}
    (clash,) = refused
    assert (clash.server, clash.tool, clash.other_server, clash.other_tool) == (
        "s_x",
        literal_tool,
        "s.x",
        "echo",
    )
    assert "is not exposed" in str(clash) and "'s.x'" in str(clash)
    assert table.lookup(hashed) == ("s.x", "echo")  # the first keeps its name
    assert table.lookup("s_x__other") == ("s_x", "other")
    table.remove("s.x")
    got, refused = table.assign("s_x", [literal_tool])
    assert refused == [] and table.lookup(hashed) == ("s_x", literal_tool)


def test_reassigning_a_server_replaces_only_its_entries() -> None:
    table = NameTable("__", OPENAI)
    table.assign("a", ["x", "y"])
    table.assign("b", ["x"])
    table.assign("a", ["z"])
    assert table.lookup("a__x") is None and table.lookup("a__z") == ("a", "z")
    assert table.lookup("b__x") == ("b", "x")
    assert table.names_of("a") == {"z": "a__z"}


names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=80
)


@given(st.lists(st.tuples(names, names), min_size=2, max_size=12, unique=True))
def test_exposed_names_are_injective_and_fit_the_rule(pairs: list[tuple[str, str]]) -> None:
    for rule in (OPENAI, GEMINI):
        pairs_ok = [(s, t) for s, t in pairs if "__" not in s]
        exposed = {expose(s, t, "__", rule) for s, t in pairs_ok}
        assert len(exposed) == len(pairs_ok)
        assert all(rule.matches(n) for n in exposed)


@given(names, names)
def test_a_server_is_found_from_any_name_it_exposes(server: str, tool: str) -> None:
    """``may_name`` maps an exposed name back to the server that made it, without
    knowing the tool (the hashed form cannot be checked without it)."""
    for rule in (OPENAI, GEMINI):
        if "__" not in server:
            assert may_name(expose(server, tool, "__", rule), server, "__", rule)


def test_may_name_follows_the_sanitizer_not_the_separator() -> None:
    spaced = expose("has space", "echo", "__", OPENAI)
    assert spaced.startswith("has_space__echo_")
    assert may_name(spaced, "has space", "__", OPENAI)
    assert not may_name(spaced, "has", "__", OPENAI)
    assert may_name(spaced, "has_space", "__", OPENAI)  # a tool "echo_<hex>" of it
    assert may_name(spaced, "has.space", "__", OPENAI)  # sanitizes alike: a candidate
    dotted = expose("v.1", "pid", "__", GEMINI)  # the dot is allowed in Gemini names
    assert dotted == "v.1__pid" and may_name(dotted, "v.1", "__", GEMINI)
    assert may_name(expose("v.1", "p d", "__", OPENAI), "v.1", "__", OPENAI)
    assert not may_name("github__search", "git", "__", OPENAI)
    assert not may_name("has_space__echo", "has space", "__", OPENAI)  # no hash
    long = "s" * 70 + " x"
    cut = expose(long, "tool", "__", OPENAI)
    assert len(cut) == 64 and may_name(cut, long, "__", OPENAI)
    assert not may_name(cut, "t" * 70, "__", OPENAI)


def test_name_overlap_says_which_servers_a_name_could_belong_to() -> None:
    """Two servers whose exposed names could not be told apart before they list
    their tools: sanitized alike, one's prefix beginning the other's, or cut to
    the same characters. The clause names the form they share."""
    assert name_overlap("my.server", "my server", "__", OPENAI) == (
        "both become 'my_server' in exposed tool names"
    )
    assert name_overlap("1x", "_1x", "__", GEMINI) == "both become '_1x' in exposed tool names"
    assert name_overlap("1x", "_1x", "__", OPENAI) is None
    assert name_overlap("a", "a_", "__", OPENAI) == (
        "have exposed tool names beginning 'a__' and 'a___'"
    )
    long = "s" * 60
    assert name_overlap(long + ".a", long + ".b", "__", OPENAI) == (
        f"have exposed tool names cut to the same first 55 characters {'s' * 55!r}"
    )
    for a, b in [("github", "gitlab"), ("a", "b"), ("has space", "has"), ("v.1", "v.2")]:
        assert name_overlap(a, b, "__", OPENAI) is None
    assert name_overlap("v.1", "v_1", "__", GEMINI) is None  # the dot is allowed there


stems = st.one_of(st.text(alphabet="ab._", max_size=8), st.text(alphabet="ab.", min_size=55))
tails = st.text(alphabet="a_. 1-", max_size=6)


@given(stems, tails, tails, st.one_of(names, tails))
def test_servers_that_do_not_overlap_never_match_each_others_names(
    stem: str, tail_a: str, tail_b: str, tool: str
) -> None:
    """``name_overlap`` is what ``may_name`` needs: two servers it lets through
    never both match one exposed name, so a name that routes nowhere yet
    belongs to one server at most. (Server names drawn with a common stem, so
    that they sanitize alike, begin alike or are cut alike.)"""
    a, b = stem + tail_a, stem + tail_b
    for rule in (OPENAI, GEMINI):
        if not a or not b or a == b or "__" in a + b or name_overlap(a, b, "__", rule):
            continue
        assert not may_name(expose(a, tool, "__", rule), b, "__", rule)
        assert not may_name(expose(b, tool, "__", rule), a, "__", rule)


@pytest.mark.parametrize(
    ("tool", "include", "exclude", "selected"),
    [
        ("search", None, (), True),
        ("search", None, ("sea*",), False),
        ("delete", ("get_*", "search"), (), False),
        ("get_file", ("get_*",), (), True),
        ("get_file", ("get_*",), ("get_file",), True),  # the allowlist wins
        ("search", (), (), False),  # an empty allowlist exposes nothing
    ],
)
def test_include_and_exclude_globs(
    tool: str, include: tuple[str, ...] | None, exclude: tuple[str, ...], selected: bool
) -> None:
    assert tool_selected(tool, include, exclude) is selected


def test_thresholds_crossed_upwards_only() -> None:
    assert crossed_thresholds(10, 50, (40, 128)) == [40]
    assert crossed_thresholds(30, 200, (40, 128)) == [40, 128]
    assert crossed_thresholds(50, 60, (40, 128)) == []
    assert crossed_thresholds(60, 30, (40, 128)) == []
    assert crossed_thresholds(40, 41, (40,)) == [40]


def test_a_name_refused_is_exposed_once_its_holder_lets_it_go() -> None:
    """A tool (or prompt) refused because another server's holds its name is
    exposed as soon as that one is gone (removed, disabled, or no longer listing
    it), without waiting for its own server to list again."""
    from mcpwire import Prompt, ServerConfig, Tool
    from mcpwire._hub_events import NameCollisionEvent
    from mcpwire._hub_registry import Registry
    from mcpwire._hub_status import Discovery

    hashed = expose("s.x", "echo", "__", NAME_PROFILES["default"])
    literal = hashed[len("s_x__") :]

    def listing(*names: str) -> Discovery:
        tools = [Tool.from_json({"name": n, "inputSchema": {"type": "object"}}) for n in names]
        return Discovery(tools=tools, prompts=[Prompt.from_json({"name": n}) for n in names])

    seen: list[object] = []
    registry = Registry("__", NAME_PROFILES["default"], (), seen.append)
    holder, other = ServerConfig(name="s.x", command="x"), ServerConfig(name="s_x", command="x")
    registry.register(holder, listing("echo"))
    refused = registry.register(other, listing(literal, "tag"))
    assert {(c.server, c.tool, c.other_server) for c in refused} == {("s_x", literal, "s.x")}
    assert [t.name for t in registry.tools_of("s_x")] == ["s_x__tag"]
    registry.register(holder, listing("echo", "more"))  # still held: nothing moves
    assert [t.name for t in registry.tools_of("s_x")] == ["s_x__tag"]
    assert len([e for e in seen if isinstance(e, NameCollisionEvent)]) == 2  # tool, prompt
    registry.register(holder, listing("more"))  # no longer listed: the name is free
    assert [t.name for t in registry.tools_of("s_x")] == [hashed, "s_x__tag"]
    assert [p.name for p in registry.prompts_of("s_x")] == [hashed, "s_x__tag"]
    assert registry.route_tool(hashed) == ("s_x", literal)
    registry.register(other, listing("tag"))
    registry.register(holder, listing("echo"))
    registry.register(other, listing(literal))
    assert registry.tools_of("s_x") == []
    registry.forget("s.x")  # removed or disabled: the name is free
    assert registry.route_tool(hashed) == ("s_x", literal)
