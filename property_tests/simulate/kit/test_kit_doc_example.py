"""docs/guide/kit.md, "Writing a verifier": the example verifier is run through the kit as the page
shows it, and every tree attribute the page's table names exists with the type it states."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from exitlaw.simulate.kit.conformance import EXACT_AND_SATURATING, run_kit
from exitlaw.theory import DraftTree

PAGE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "kit.md"


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Writing a verifier")
    return text[start : text.index("\n## ", start + 1)]


def test_the_example_verifier_in_the_docs_is_exact_and_saturating():
    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    assert len(blocks) == 1, blocks
    namespace: dict = {}
    exec(compile(blocks[0], f"{PAGE}:example", "exec"), namespace)
    rep = run_kit(namespace["walk"], name="docs:walk", seed=3)
    assert rep.verdict == EXACT_AND_SATURATING and rep.exit_code == 0, rep.failure


def test_every_tree_attribute_the_docs_name_exists():
    rows = re.findall(
        r"^\| `([^|]+?)`(?:, `([^|]+?)`)?(?:, `([^|]+?)`)? \| `([^`]+)`", _section(), re.M
    )
    names = [n for row in rows for n in row[:3] if n and n not in ("tree", "probs", "rng")]
    names = [n.split("(")[0] for n in names]
    assert {"parent", "token", "children", "child_with_token", "depth", "path"} <= set(names)
    tree = DraftTree(parent=np.array([-1, 0, 0, 1]), token=np.array([-1, 5, 7, 2]))
    for name in names:
        assert hasattr(tree, name), (
            f"docs/guide/kit.md names DraftTree.{name}, which does not exist"
        )
    assert tree.child_with_token(0, 7) == 2 and tree.child_with_token(0, 3) is None
    assert [list(c) for c in tree.children] == [[1, 2], [3], [], []]
    assert tree.path(3) == (5, 2) and tree.path_nodes(3) == (0, 1, 3)
    assert (tree.num_nodes, tree.budget, tree.max_depth) == (4, 3, 2)
