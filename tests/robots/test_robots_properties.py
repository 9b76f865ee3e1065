"""Randomised properties: RobotsTxt vs a brute-force reference, vs Google's parser, metamorphic."""

from __future__ import annotations

import random
import re

import pytest
from gpyrobotstxt.robots_cc import RobotsMatcher

from crawlers.robots import RobotsTxt
from crawlers.robots_match import normalize_path

AGENTS = ["alpha", "Alpha-Bot", "alpha-bot-x", "beta", "gamma_bot"]
PATH_CHARS = "ab/.?=-"
PATTERN_CHARS = PATH_CHARS + "**$"


def _random_pattern(rng: random.Random) -> str:
    body = "".join(rng.choice(PATTERN_CHARS) for _ in range(rng.randint(0, 6)))
    pattern = "/" + body if rng.random() < 0.85 else body
    return pattern + ("$" if rng.random() < 0.15 else "")


def _random_path(rng: random.Random) -> str:
    return "/" + "".join(rng.choice(PATH_CHARS) for _ in range(rng.randint(0, 8)))


def _random_groups(rng: random.Random) -> list[tuple[list[str], list[tuple[bool, str]]]]:
    groups = []
    for i in range(rng.randint(0, 4)):
        agents = rng.sample([*AGENTS, "*"], rng.randint(1, 2))
        last = i == 3
        rules = [
            (rng.random() < 0.5, _random_pattern(rng))
            for _ in range(rng.randint(0 if last else 1, 6))
        ]
        groups.append((agents, rules))
    return groups


def _render(groups: list[tuple[list[str], list[tuple[bool, str]]]], rng: random.Random) -> bytes:
    eol = rng.choice(["\n", "\r\n", "\r"])
    lines = ["# generated"] if rng.random() < 0.3 else []
    for agents, rules in groups:
        for agent in agents:
            key = rng.choice(["User-agent", "user-agent", "USER-AGENT", "useragent"])
            lines.append(f"{key}:{rng.choice(['', ' ', '  '])}{agent}")
        for is_allow, pattern in rules:
            key = "Allow" if is_allow else rng.choice(["Disallow", "disallow", "dissallow"])
            lines.append(f"{key}: {pattern}" + (" # note" if rng.random() < 0.2 else ""))
        if rng.random() < 0.5:
            lines.append("")
    return eol.join(lines).encode()


def _reference_allows(groups, agent: str, path: str) -> bool:
    """Brute force: select groups, translate every pattern to a regex, longest match wins."""
    chosen = [rules for agents, rules in groups if agent.lower() in (a.lower() for a in agents)]
    if not chosen:
        chosen = [rules for agents, rules in groups if "*" in agents]
    best, allowed = -1, True
    for is_allow, pattern in (rule for rules in chosen for rule in rules):
        if not pattern:
            continue
        anchored = pattern.endswith("$")
        core = pattern[:-1] if anchored else pattern
        regex = "".join(".*" if ch == "*" else re.escape(ch) for ch in core) + (
            r"\Z" if anchored else ""
        )
        if re.match(regex, path, re.DOTALL):
            if len(pattern) > best or (len(pattern) == best and is_allow):
                best, allowed = len(pattern), is_allow
    return allowed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", range(4))
def test_matches_brute_force_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        groups = _random_groups(rng)
        robots = RobotsTxt.parse(_render(groups, rng))
        for _ in range(8):
            agent, path = rng.choice([*AGENTS, "delta"]), _random_path(rng)
            expected = _reference_allows(groups, agent, path)
            # Absolute URL: a bare path starting with '//' would be a network-path reference.
            assert robots.allows(agent, "http://h" + path) is expected, (groups, agent, path)


@pytest.mark.timeout(120)
def test_agrees_with_googles_parser_on_plain_ascii_input() -> None:
    rng = random.Random(1234)
    for _ in range(500):
        body = _render(_random_groups(rng), rng)
        robots = RobotsTxt.parse(body)
        for _ in range(6):
            agent, path = rng.choice([*AGENTS, "delta"]), _random_path(rng)
            google = RobotsMatcher().one_agent_allowed_by_robots(body, agent, "http://h" + path)
            assert robots.allows(agent, "http://h" + path) is google, (body, agent, path)


def _escape_non_ascii(text: str, rng: random.Random, share: float = 1.0) -> str:
    """Percent-encode (UTF-8) some or all non-ASCII characters, with random hex case."""
    out = []
    for ch in text:
        if not ch.isascii() and rng.random() < share:
            esc = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
            out.append(esc.lower() if rng.random() < 0.5 else esc)
        else:
            out.append(ch)
    return "".join(out)


@pytest.mark.timeout(60)
def test_raw_and_escaped_non_ascii_rules_are_one_rule_for_encoded_urls() -> None:
    # Google's MaybeEscapePattern: 'Disallow: /é' and 'Disallow: /%C3%A9' (any hex case) are the
    # same rule; the URL is compared as given, so its encoded spelling is what matches.
    rng = random.Random(7)
    for _ in range(300):
        pattern = "/" + "".join(rng.choice("abcéツ/*") for _ in range(rng.randint(1, 6)))
        path = "/" + "".join(rng.choice("abcéツ/") for _ in range(rng.randint(0, 8)))
        plain = RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n".encode())
        respelled = RobotsTxt.parse(
            f"User-agent: *\nDisallow: {_escape_non_ascii(pattern, rng, 0.5)}\n".encode()
        )
        encoded = _escape_non_ascii(path, rng)
        want = plain.allows("x", encoded)
        assert respelled.allows("x", encoded) is want, (pattern, encoded)
        assert plain.allows("x", normalize_path(encoded)) is want
        # With upper-case hex (as a canonicaliser writes it), Google's parser agrees.
        upper = re.sub(r"%[0-9a-f]{2}", lambda m: m.group().upper(), encoded)
        google = RobotsMatcher().one_agent_allowed_by_robots(
            f"User-agent: *\nDisallow: {pattern}\n".encode(), "x", "http://h" + upper
        )
        assert plain.allows("x", "http://h" + upper) is google, (pattern, upper)
        assert plain.allows("x", upper) is want


@pytest.mark.timeout(60)
def test_agent_lookup_is_case_insensitive_and_exact() -> None:
    rng = random.Random(11)
    for _ in range(200):
        groups = _random_groups(rng)
        robots = RobotsTxt.parse(_render(groups, rng))
        agent, path = rng.choice(AGENTS), _random_path(rng)
        url = "http://h" + path
        assert robots.allows(agent.upper(), url) is robots.allows(agent.lower(), url)
        assert robots.allows(f"Mozilla/5.0 (compatible; {agent}/2.0)", url) is robots.allows(
            agent, url
        )


@pytest.mark.timeout(120)
def test_large_rule_sets_match_brute_force_reference() -> None:
    # Many rules per group exercise the length and wildcard-head indexes, not just a few rules.
    rng = random.Random(99)
    for _ in range(60):
        groups = [
            (
                rng.sample([*AGENTS, "*"], rng.randint(1, 2)),
                [(rng.random() < 0.4, _random_pattern(rng)) for _ in range(rng.randint(20, 120))],
            )
            for _ in range(rng.randint(1, 3))
        ]
        robots = RobotsTxt.parse(_render(groups, rng))
        for _ in range(40):
            agent, path = rng.choice([*AGENTS, "delta"]), _random_path(rng)
            expected = _reference_allows(groups, agent, path)
            assert robots.allows(agent, "http://h" + path) is expected, (agent, path)
