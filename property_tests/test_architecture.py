"""Architecture rules of docs/architecture.md §1 and §2 that a refactor could silently break."""

import subprocess
import sys

ENGINE_IMPORTS_NO_JAX = r"""
import importlib, pkgutil, sys
import exitlaw.engine as engine
import exitlaw.theory as theory
from exitlaw.theory import DraftTree, read_trace, reference_law, oracle_tree  # numpy-only parts
names = [m.name for m in pkgutil.walk_packages(engine.__path__, engine.__name__ + ".")]
for name in names:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.") or m.startswith("jaxlib"))
print(len(names), "engine modules imported;", "jax modules loaded:", bad[:5])
sys.exit(1 if bad else 0)
"""


def test_engine_never_imports_jax():
    proc = subprocess.run(
        [sys.executable, "-c", ENGINE_IMPORTS_NO_JAX], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_theory_numpy_parts_import_without_jax():
    code = (
        "import sys; import exitlaw.theory as t; t.DraftTree.chain([1]); "
        "sys.exit(1 if 'jax' in sys.modules else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_theory_jax_parts_load_on_first_access():
    code = "import exitlaw.theory as t; f = t.exit_law; import sys; sys.exit(0 if 'jax' in sys.modules else 1)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_every_engine_export_is_the_named_object_even_after_submodule_imports():
    import importlib
    import pkgutil

    import exitlaw.engine as engine
    from exitlaw.theory.infra.lazy import lazy_table

    # the face's lazy table, as its source writes it: lazy_attributes(__name__, {module: names})
    source = ast.parse(Path(engine.__file__).read_text(encoding="utf-8"))
    call = next(
        node.value
        for node in source.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "lazy_attributes"
    )
    table = lazy_table(ast.literal_eval(call.args[1]))
    assert sorted(table) == sorted(engine.__all__)
    for mod in pkgutil.walk_packages(engine.__path__, "exitlaw.engine."):
        importlib.import_module(mod.name)  # may bind submodules as package attributes
    for name, (module, attr) in table.items():
        want = getattr(importlib.import_module(f"exitlaw.engine.{module}"), attr)
        assert getattr(engine, name) is want, (
            f"exitlaw.engine.{name} is shadowed (a submodule of that name?)"
        )


def test_cli_help_imports_neither_torch_nor_jax():
    code = (
        "import sys; from exitlaw.cli import build_parser; build_parser(); "
        "heavy = [m for m in ('torch', 'jax') if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----- static import rules (docs/architecture.md §1), read from the source: function-local imports count too --
import ast  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "cli": ROOT / "exitlaw" / "cli",
    "theory": ROOT / "theory",
    "simulate": ROOT / "simulate",
    "engine": ROOT / "engine",
    "figures": ROOT / "figures",
    "paper_repro": ROOT / "paper_repro",
}
# part -> the parts it may import (data flows one way: theory <- simulate <- engine <- figures/paper_repro)
ALLOWED = {
    "theory": set(),
    "simulate": {"theory"},
    "engine": {"theory"},
    "figures": {"theory", "simulate", "engine"},
    "paper_repro": {"theory", "simulate", "engine", "figures"},
    "cli": {"theory", "simulate", "engine", "figures", "paper_repro"},
}


def _module_name(part: str, path: Path) -> str:
    rel = path.relative_to(PARTS[part]).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["exitlaw", part, *parts])


def _imports(part: str, path: Path) -> list[tuple[str, int]]:
    """Absolute names of every import in the file (anywhere in it), with line numbers."""
    mod = _module_name(part, path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((name, node.lineno))
            out += [
                (f"{name}.{a.name}", node.lineno) for a in node.names
            ]  # `from pkg import submodule`
    return out


def _part_of(name: str) -> str | None:
    bits = name.split(".")
    if len(bits) >= 2 and bits[0] == "exitlaw" and bits[1] in PARTS:
        return bits[1]
    return None


def _all_files():
    for part, folder in PARTS.items():
        for path in sorted(folder.rglob("*.py")):
            yield part, path


def test_only_the_cli_package_imports_argparse():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for part, path in _all_files()
        if part != "cli"
        for name, line in _imports(part, path)
        if name == "argparse"
    ]
    assert not offenders, f"argparse outside exitlaw/cli: {offenders}"


def test_parts_import_only_the_layers_below_them():
    offenders = []
    for part, path in _all_files():
        for name, line in _imports(part, path):
            other = _part_of(name)
            if other is not None and other != part and other not in ALLOWED[part]:
                offenders.append(
                    f"{path.relative_to(ROOT)}:{line} imports {name} ({part} may not import {other})"
                )
    assert not offenders, "\n".join(offenders)


def test_figures_never_import_paper_repro():
    offenders = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for part, path in _all_files()
        if part == "figures"
        for name, line in _imports(part, path)
        if _part_of(name) == "paper_repro"
    ]
    assert not offenders, offenders


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for u in sorted(graph.get(v, ())):
            if state.get(u) == 1:
                return stack[stack.index(u) :] + [u]
            if state.get(u) is None and (found := visit(u)):
                return found
        state[v] = 2
        stack.pop()
        return None

    for v in sorted(graph):
        if state.get(v) is None and (found := visit(v)):
            return found
    return None


def test_no_import_cycle_between_parts():
    graph: dict[str, set[str]] = {p: set() for p in PARTS}
    for part, path in _all_files():
        for name, _ in _imports(part, path):
            other = _part_of(name)
            if other is not None and other != part:
                graph[part].add(other)
    assert _find_cycle(graph) is None, (
        f"import cycle between parts: {' -> '.join(_find_cycle(graph))}"
    )


def test_the_cycle_finder_finds_a_planted_cycle():
    assert _find_cycle({"figures": {"paper_repro"}, "paper_repro": {"figures"}}) == [
        "figures",
        "paper_repro",
        "figures",
    ]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


# ----- sub-package rules (docs/architecture.md §2): inside a part, which room may use which -----------
# part -> sub-package -> the sub-packages of the same part it may import. "." is the part's own top-level
# modules (simulate: the randomness interface, statistics, Hypothesis strategies, shared by every room).
# A part's __init__.py is its public face and may re-export from every room; a sub-package's __init__
# re-exports its own modules' names (property_tests/test_faces.py checks every face).
SUBPACKAGE_RULES = {
    "theory": {
        ".": {".", "trace", "infra"},
        "trace": {"."},
        "infra": set(),  # atomic writes, provenance, MODULE:CALLABLE specs: nothing else of theory
    },
    "simulate": {
        ".": {"."},
        "verifiers": {"."},
        "builders": {"."},  # builders read rows and drafters they are given: no lab, no verifier
        "lab": {".", "verifiers", "builders"},  # the lab never uses the kit or the prover
        "kit": {".", "verifiers"},  # the kit never uses the lab's presets or models
        "prove": {".", "verifiers", "kit"},  # the prover loads procedures as the kit does
        "exittrain": {".", "lab", "builders"},
        "bench": {".", "verifiers", "lab", "kit", "builders"},
        "audit": {"."},  # the server audit: an HTTP client + the shared statistics
    },
    "engine": {
        ".": set(),
        "models": set(),  # models know nothing of decoding or training
        "prompts": set(),
        "builders": set(),  # builders turn draft rows into trees: no models, no decoding
        "decode": {"models", "builders"},  # decoding never imports training or benchmarks
        "training": {"models", "decode", "prompts", "builders"},
        "bench": {"models", "decode", "prompts", "builders"},
        "serve": {"models", "decode", "prompts"},  # the HTTP server runs the engine's entry points
    },
    "paper_repro": {
        ".": {".", "mini", "ledger"},  # ledger_inputs gathers the inputs and builds the ledger
        "ledger": {".", "mini"},  # verdicts, regimes, paired effects; mini's ExitTrain units
        "mini": set(),  # the mini pipeline knows nothing of the ledger
    },
}


def _room(part_dir: Path, rel_parts: tuple[str, ...]) -> str:
    """The sub-package a module (path parts relative to its part) lives in, or "." for the part's top level."""
    return rel_parts[0] if len(rel_parts) > 1 and (part_dir / rel_parts[0]).is_dir() else "."


def subpackage_offenders(root: Path) -> list[str]:
    """Every import (anywhere in a file, relative ones resolved) that breaks :data:`SUBPACKAGE_RULES`."""
    offenders = []
    for part, rules in SUBPACKAGE_RULES.items():
        part_dir = root / part
        for path in sorted(part_dir.rglob("*.py")):
            rel = path.relative_to(part_dir)
            if rel == Path("__init__.py"):
                continue
            room = _room(part_dir, rel.parts)
            mod_parts = [p for p in rel.with_suffix("").parts if p != "__init__"]
            package = [
                "exitlaw",
                part,
                *(mod_parts if path.name == "__init__.py" else mod_parts[:-1]),
            ]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = package[: len(package) - (node.level - 1)] if node.level else []
                    name = ".".join(base + ([node.module] if node.module else []))
                    names = [name] + [f"{name}.{a.name}" for a in node.names]
                for name in names:
                    bits = name.split(".")
                    if bits[:2] != ["exitlaw", part] or len(bits) < 3:
                        continue
                    other = _room(part_dir, tuple(bits[2:]) + ("x",))
                    if other != room and other not in rules.get(room, set()):
                        offenders.append(
                            f"{part}/{rel}:{node.lineno} imports {name} "
                            f"({part}/{room} may not import {part}/{other})"
                        )
    return offenders


def test_every_sub_package_has_a_rule_and_rules_name_only_real_sub_packages():
    for part, rules in SUBPACKAGE_RULES.items():
        real = {p.name for p in (ROOT / part).iterdir() if (p / "__init__.py").is_file()} | {"."}
        assert set(rules) == real, (
            f"{part}: rules for {sorted(set(rules))}, sub-packages {sorted(real)}"
        )


def test_sub_packages_import_only_the_rooms_their_rules_allow():
    offenders = subpackage_offenders(ROOT)
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize(
    "file, planted",
    [
        ("simulate/builders/trees.py", "from exitlaw.simulate.kit import conformance"),
        ("simulate/builders/caddtree.py", "from exitlaw.simulate.lab.presets import SimConfig"),
        ("engine/builders/single.py", "from exitlaw.engine.decode.loop import DecodeConfig"),
        ("engine/builders/batched.py", "from exitlaw.engine.models.target import compact_rows_"),
        ("simulate/kit/cases.py", "from ..lab.presets import SimConfig"),
        ("engine/decode/loop.py", "import exitlaw.engine.training.loop"),
        ("engine/models/target.py", "from exitlaw.engine.decode.verifiers import verify_tev"),
        ("paper_repro/mini/evaluate.py", "from exitlaw.paper_repro.ledger import CLAIMS"),
        ("engine/decode/loop.py", "from exitlaw.engine.serve.app import ServeApp"),
        ("simulate/audit/run.py", "from exitlaw.simulate.kit.conformance import run_kit"),
        ("theory/infra/atomic_io.py", "from exitlaw.theory.tree import DraftTree"),
        ("simulate/verifiers/fast.py", "from exitlaw.simulate.lab.models import NGramTarget"),
    ],
)
def test_a_planted_import_that_breaks_a_sub_package_rule_is_found(tmp_path, file, planted):
    for part in SUBPACKAGE_RULES:
        shutil.copytree(
            ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "results")
        )
    assert subpackage_offenders(tmp_path) == []
    target = tmp_path / file
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n\ndef _planted():\n    {planted}\n",
        encoding="utf-8",
    )
    found = subpackage_offenders(tmp_path)
    assert len(found) >= 1 and all(f.startswith(file) for f in found), found


def test_no_part_folder_holds_more_than_fifteen_modules_directly():
    crowded = {}
    for folder in [ROOT / p for p in ("theory", "simulate", "engine", "figures", "paper_repro")]:
        for d in [folder, *[p for p in folder.rglob("*") if (p / "__init__.py").is_file()]]:
            n = len([f for f in d.glob("*.py") if f.name != "__init__.py"])
            if n > 15:
                crowded[str(d.relative_to(ROOT))] = n
    assert not crowded, f"folders holding more than 15 modules: {crowded}"


# ----- no circle inside a room, few imports inside functions (issue 47) ---------------------------------
def module_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the project it imports (anywhere in its file, relative imports
    resolved; ``from package import name`` points at ``package.name`` when that is a module, else at
    the package's face)."""
    folders = {part: root / PARTS[part].relative_to(ROOT) for part in PARTS}
    files = {}
    for part, folder in folders.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            files[".".join(["exitlaw", part, *[p for p in rel.parts if p != "__init__"]])] = path

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                bits = package.split(".")
                base = bits[: len(bits) - (node.level - 1)] if node.level else []
                name = ".".join(base + ([node.module] if node.module else []))
                names = [
                    f"{name}.{a.name}" if f"{name}.{a.name}" in files else name for a in node.names
                ]
            graph[mod] |= {o for o in map(owner, names) if o is not None and o != mod}
    return graph


def test_no_import_cycle_between_modules():
    """No circle of imports inside a part or a room, counting imports inside functions and faces."""
    cycle = _find_cycle(module_graph(ROOT))
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


def test_the_module_graph_finds_a_planted_cycle(tmp_path):
    for part in PARTS:
        (tmp_path / PARTS[part].relative_to(ROOT)).mkdir(parents=True, exist_ok=True)
    room = tmp_path / "theory" / "room"
    room.mkdir()
    (room / "__init__.py").write_text('"""A room."""\n')
    (room / "a.py").write_text("def f():\n    from . import b\n")
    (room / "b.py").write_text("from exitlaw.theory.room.a import f\n")
    graph = module_graph(tmp_path)
    assert graph["exitlaw.theory.room.a"] == {"exitlaw.theory.room.b"}
    assert _find_cycle(graph) == [
        "exitlaw.theory.room.a",
        "exitlaw.theory.room.b",
        "exitlaw.theory.room.a",
    ]
