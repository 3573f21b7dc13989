"""The commands the docs show work as written: every ``exitlaw ...`` line of a fenced code block in
README.md and docs/ parses with today's command line (a renamed command or flag left in a page fails
here). Synopsis lines (alternatives ``a|b``, optional parts ``[...]``, elisions ``...``) are not
commands and are skipped; the parse runs no handler."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from exitlaw.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SYNOPSIS = re.compile(r"\||\[|\.\.\.|<|>")


def documented_commands() -> list[tuple[str, str]]:
    """``(page:line, command)`` for each ``exitlaw`` command in a fenced block (continuations joined,
    shell comments and leading ``$`` dropped)."""
    found = []
    for page in PAGES:
        fenced, pending, start = False, "", 0
        for n, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if raw.lstrip().startswith("```"):
                fenced, pending = not fenced, ""
                continue
            if not fenced:
                continue
            line = raw.strip().removeprefix("$ ")
            if pending:
                line, pending = pending + " " + line, ""
            elif not line.startswith("exitlaw "):
                continue
            else:
                start = n
            code = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if code.endswith("\\"):
                pending = code[:-1].strip()
                continue
            for part in re.split(r"\s*(?:&&|;|&)\s*", code):
                if part.startswith("exitlaw ") and not SYNOPSIS.search(part):
                    found.append((f"{page.relative_to(ROOT)}:{start}", part))
    return found


COMMANDS = documented_commands()


def test_the_docs_show_commands():
    assert len(COMMANDS) >= 30, COMMANDS  # the scan itself is not vacuous


@pytest.mark.parametrize("where,command", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_each_documented_command_parses(where, command, capsys):
    argv = shlex.split(command)[1:]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        err = capsys.readouterr().err.strip().splitlines()
        pytest.fail(f"{where}: `{command}` does not parse ({exit_.code}): {err[-1] if err else ''}")
    assert getattr(args, "func", None) is not None, f"{where}: `{command}` names no command"
