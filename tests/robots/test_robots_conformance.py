"""RobotsTxt against the conformance table (Google robots_test.cc + RFC 9309 + Refinery cases)."""

from __future__ import annotations

import pytest
from gpyrobotstxt.robots_cc import RobotsMatcher

from crawlers.robots import RobotsTxt

from .robots_conformance_cases import CASES, Case

# Bugs of the gpyrobotstxt port itself (Google's C++ parser agrees with the table here):
# a colon-less one-word line ("EOF") crashes it, and it rejects "key    value" with several
# spaces where robots.cc skips the whole whitespace run.
_GPY_PORT_BUGS = {"rfc.5.1", "refinery.no_colon_multiple_spaces"}


def test_table_is_large_and_ids_are_unique() -> None:
    assert len(CASES) >= 250
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_robots_txt_matches_conformance_table(case: Case) -> None:
    robots = RobotsTxt.parse(case.robots)
    assert robots.allows(case.agent, case.url) is case.expected, case.note


@pytest.mark.timeout(120)
def test_table_agrees_with_googles_parser_except_documented_deviations() -> None:
    # Pins down that the table encodes Google's behaviour, and that every deviation says why.
    mismatches = []
    for case in CASES:
        if case.id.split("#")[0] in _GPY_PORT_BUGS:
            continue
        google = case.expected if case.google is None else case.google
        got = RobotsMatcher().one_agent_allowed_by_robots(case.robots, case.agent, case.url)
        if got != google:
            mismatches.append(case.id)
        if case.google is not None:
            assert case.note, f"{case.id}: a deviation from Google must carry a note"
    assert mismatches == []
