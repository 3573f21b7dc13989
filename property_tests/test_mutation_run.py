"""The mutation run's mutants (property_tests/helpers/mutation_run.py): each operator the docstring lists
yields its one-line mutant, strings (docstrings too) are never mutated, every mutant compiles and changes
exactly one line, and ``--lines`` / ``--sample`` select as stated."""

from __future__ import annotations

import ast

from property_tests.helpers.mutation_run import mutants_of, parse_lines

SOURCE = '''"""Module docstring with 1 < 2 and a + b."""


def f(a, b, xs):
    """Docstring: 3 > 2."""
    if a < b and not xs:
        return min(a, b) + 1
    if a is None or b in xs:
        a += 2
    s = "x == y"
    return pow(a, b) * 2.0 ** 1 // 3 - True
'''


def _changes(m) -> tuple[str, str]:
    old_lines, new_lines = SOURCE.splitlines(), m.apply(SOURCE).splitlines()
    diff = [(o, n) for o, n in zip(old_lines, new_lines) if o != n]
    assert len(old_lines) == len(new_lines) and len(diff) == 1, m
    return diff[0]


def test_every_operator_gives_its_mutant_and_each_changes_one_line():
    ms = mutants_of(SOURCE)
    whats = {m.what for m in ms}
    for want in (
        "< -> <=",
        "< -> >",
        "and -> or",
        "or -> and",
        "not dropped",
        "min -> max",
        "+ -> -",
        "+= -> -=",
        "is -> is not",
        "in -> not in",
        "1 -> 2",
        "1 -> 0",
        "2 -> 3",
        "True -> False",
        "two arguments swapped",
        "* -> /",
        "** -> *",
        "// -> /",
        "- -> +",
    ):
        assert want in whats, want
    for m in ms:
        ast.parse(m.apply(SOURCE))
        old, new = _changes(m)
        assert m.line == SOURCE.splitlines().index(old) + 1
    swapped = [m for m in ms if m.what == "two arguments swapped"]
    assert {_changes(m)[1].strip() for m in swapped} >= {"return min(b, a) + 1"}


def test_strings_and_docstrings_are_never_mutated():
    for m in mutants_of(SOURCE):
        old, _ = _changes(m)
        assert '"""' not in old and '"x == y"' not in old, m
    assert not mutants_of('X = "1 < 2"\n')


def test_lines_spec():
    assert parse_lines("3-5,9") == {3, 4, 5, 9}
    assert parse_lines(None) is None
