"""Issue 47's "Done when" for the shape of the source, measured by the tools in property_tests/helpers:
no function over 100 lines and at most 8 over 80; no comment stranded after closing brackets; at most
60 imports inside functions, each saying why (``# lazy: ...``). Each tool is also run on a planted file,
so a tool that stopped seeing would fail here too."""

from __future__ import annotations

import textwrap
from pathlib import Path

from helpers.function_imports import LIMIT, all_function_imports, function_imports
from helpers.function_lengths import function_lengths, source_files, stranded_comments

ROOT = Path(__file__).resolve().parent.parent


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_no_function_over_100_lines_and_at_most_8_over_80():
    rows = [
        (n, f"{_where(p, line)} {name}")
        for p in source_files(ROOT)
        for n, name, line in function_lengths(p)
    ]
    assert len(rows) > 1000  # the walk reached the source
    assert [w for n, w in rows if n > 100] == []
    over_80 = [w for n, w in rows if n > 80]
    assert len(over_80) <= 8, over_80


def test_no_comment_is_stranded_after_closing_brackets():
    stranded = [
        f"{_where(p, line)} {text}"
        for p in source_files(ROOT)
        for line, text in stranded_comments(p)
    ]
    assert stranded == []


def test_imports_inside_functions_are_few_and_each_says_why():
    found = all_function_imports(ROOT)
    unexplained = [f"{_where(i.path, i.line)} {i.module}" for i in found if i.reason is None]
    assert unexplained == [], (
        "imports inside functions need a `# lazy: why` comment on their first line"
    )
    assert len(found) <= LIMIT, [f"{_where(i.path, i.line)} {i.module}: {i.reason}" for i in found]


PLANTED = (
    """\
import json  # top level: not counted


def heavy():
    import torch  # lazy: torch is optional here
    from numpy import (  # lazy: planted
        array,
    )
    import os

    def inner():
        from . import sibling

    return torch, array, os, inner


class Holder:
    def method(self):
        from x.y import z  # a comment that is not a reason
        return z


def long_one():
    call(
        1,
    )  # stranded after a closing bracket
"""
    + "    x = 1\n" * 85
)


def test_the_tools_see_what_is_planted(tmp_path):
    path = tmp_path / "planted.py"
    path.write_text(textwrap.dedent(PLANTED))
    found = [(i.line, i.module, i.reason) for i in function_imports(path)]
    assert found == [
        (5, "torch", "torch is optional here"),
        (6, "numpy", "planted"),
        (9, "os", None),
        (12, ".", None),
        (19, "x.y", None),
    ]
    lengths = {name: n for n, name, _ in function_lengths(path)}
    assert lengths["heavy.inner"] == 2 and lengths["Holder.method"] == 3
    assert lengths["long_one"] > 80
    assert [text for _, text in stranded_comments(path)] == ["# stranded after a closing bracket"]
