"""Each module has one dotted path, and every package shows its public names one way.

A face (a package's ``__init__``) re-exports its names statically: ``from .module import *`` where it
takes a module's whole ``__all__`` (and its ``__all__`` splices ``*module.__all__``), ``from .module
import name`` where it picks (and its ``__all__`` lists the picked names, sorted). Names whose module
would load torch or JAX where a light import needs the face (``exitlaw --help``, theory's numpy parts,
the scipy-free ``exitlaw.simulate``) load on first access through one PEP 562 helper, called the same
way in every face: the names imported under ``if TYPE_CHECKING:`` for static tools, and at runtime
``__getattr__, __dir__ = lazy_attributes(__name__, {"module": "name, attribute as name"})``
(:mod:`exitlaw.theory.infra.lazy`), one entry per module.
No package installs an import hook: a module that moved is importable at its new path only.
"""

import ast
import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from exitlaw.theory.infra.lazy import lazy_table

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "exitlaw.theory": ROOT / "theory",
    "exitlaw.simulate": ROOT / "simulate",
    "exitlaw.engine": ROOT / "engine",
    "exitlaw.figures": ROOT / "figures",
    "exitlaw.paper_repro": ROOT / "paper_repro",
}


def _faces() -> dict[str, Path]:
    out = {}
    for package, folder in PARTS.items():
        for init in sorted(folder.rglob("__init__.py")):
            rel = init.parent.relative_to(folder).parts
            out[".".join([package, *rel])] = init
    return out


FACES = _faces()


def _absolute(face: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = face.split(".")[: len(face.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


LAZY_HELPER = "exitlaw.theory.infra.lazy"


def _source(module: str) -> Path:
    """The file that defines ``module`` (a module or a package), found from PARTS without importing it."""
    for package, folder in PARTS.items():
        if module == package or module.startswith(package + "."):
            base = folder.joinpath(*module[len(package) :].strip(".").split("."))
            return (
                base.with_suffix(".py")
                if base.with_suffix(".py").is_file()
                else base / "__init__.py"
            )
    raise AssertionError(f"{module} is not in one of {sorted(PARTS)}")


def _module_all(module: str) -> list[str]:
    """A module's ``__all__``, read from its source: the list ``from module import *`` takes."""
    if module in FACES:
        return Face(module).all or []
    for node in ast.parse(_source(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{module} has no literal __all__ (a face star-imports it)")


def _lazy_call(face: str, call: ast.expr) -> dict[str, tuple[str, str]]:
    """``{name: (module, attribute)}`` from ``lazy_attributes(__name__, {"module": "a, b as c"})``."""
    assert (
        isinstance(call, ast.Call) and len(call.args) == 2 and isinstance(call.args[1], ast.Dict)
    ), (
        f"{face}: __getattr__, __dir__ = lazy_attributes(__name__, {{module: names}}), a literal table"
    )
    table = lazy_table(ast.literal_eval(call.args[1]))
    return {name: (f"{face}.{module}", attr) for name, (module, attr) in table.items()}


class Face:
    """What a face's source says: its static re-exports (``*`` expanded), the submodules it binds, its
    TYPE_CHECKING imports, its lazy table and its ``__all__`` (``*module.__all__`` expanded)."""

    def __init__(self, name: str):
        self.name = name
        self.tree = ast.parse(FACES[name].read_text(encoding="utf-8"))
        self.static: dict[str, tuple[str, str]] = {}
        self.starred: list[str] = []  # modules re-exported whole: ``from .module import *``
        self.modules: dict[str, str] = {}  # ``from . import module``: bound name -> module
        self.type_checking: dict[str, tuple[str, str]] = {}
        self.lazy: dict[str, tuple[str, str]] | None = None
        self.all: list[str] | None = None
        self.spliced: list[str] = []  # modules whose __all__ the face's __all__ splices in
        self.picked: list[str] = []  # the names __all__ lists one by one
        self.defined: set[str] = set()
        self.getattr_def: ast.AST | None = None  # the face's __getattr__ (its helper call)
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and _absolute(name, node) == LAZY_HELPER:
                continue  # the one helper, not a public name
            if isinstance(node, ast.ImportFrom) and _absolute(name, node).startswith("exitlaw."):
                module = _absolute(name, node)
                for a in node.names:
                    if a.name == "*":
                        self.starred.append(module)
                        self.static.update({n: (module, n) for n in _module_all(module)})
                    else:
                        self.static[a.asname or a.name] = (module, a.name)
                        if _source(
                            f"{module}.{a.name}"
                        ).exists():  # a submodule, or a name it shadows
                            self.modules[a.asname or a.name] = f"{module}.{a.name}"
            elif _is_type_checking(node):
                for sub in node.body:
                    assert isinstance(sub, ast.ImportFrom), (
                        f"{name}: only imports under TYPE_CHECKING"
                    )
                    for a in sub.names:
                        self.type_checking[a.asname or a.name] = (_absolute(name, sub), a.name)
            elif (
                isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Tuple)
                and [getattr(e, "id", None) for e in node.targets[0].elts]
                == ["__getattr__", "__dir__"]
            ):
                self.getattr_def = node.value  # the helper's call: compared across faces
                self.lazy = _lazy_call(name, node.value)
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
                if target == "__all__":
                    self.all = self._read_all(node.value)
                else:
                    self.defined.add(target)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.defined.add(node.name)
                if node.name == "__getattr__":
                    self.getattr_def = node
        bases = {m: n for n, m in self.modules.items() if m in self.spliced}
        self.modules = {n: m for m, n in bases.items()}  # the submodules bound for __all__ only
        for n in self.modules:
            del self.static[n]

    def _read_all(self, value: ast.expr) -> list[str]:
        """``__all__ = [*module.__all__, ..., "name", ...]``, as static tools (griffe) read it."""
        assert isinstance(value, ast.List), f"{self.name}: __all__ is not a list"
        names = []
        for elt in value.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                self.picked.append(elt.value)
                names.append(elt.value)
                continue
            assert (
                isinstance(elt, ast.Starred)
                and isinstance(elt.value, ast.Attribute)
                and elt.value.attr == "__all__"
                and isinstance(elt.value.value, ast.Name)
                and elt.value.value.id in self.modules
            ), f"{self.name}: __all__ holds {ast.unparse(elt)}, not a name or *submodule.__all__"
            module = self.modules[elt.value.value.id]
            self.spliced.append(module)
            names += _module_all(module)
        return names

    def origin(self, name: str) -> tuple[str, str] | None:
        """``(module, attribute)`` the face says ``name`` comes from (None: defined in the face)."""
        return self.static.get(name) or (self.lazy or {}).get(name)


@pytest.mark.parametrize("face", sorted(FACES))
def test_a_face_lists_every_public_name_in_a_static_all_and_each_has_one_origin(face):
    f = Face(face)
    assert f.all is not None, f"{face}: no __all__"
    assert all(isinstance(n, str) for n in f.all) and len(f.all) == len(set(f.all)), face
    unknown = [n for n in f.all if f.origin(n) is None and n not in f.defined]
    assert not unknown, f"{face}: __all__ names nothing imports or defines: {unknown}"
    both = set(f.static) & set(f.lazy or {})
    assert not both, f"{face}: names both static and lazy: {sorted(both)}"
    public = [n for n in [*f.static, *(f.lazy or {})] if not n.startswith("_")]
    missing = sorted(set(public) - set(f.all))
    assert not missing, f"{face}: re-exported but not in __all__: {missing}"


@pytest.mark.parametrize("face", sorted(FACES))
def test_a_face_states_each_name_once_where_it_can(face):
    """A module re-exported whole is star-imported and its ``__all__`` spliced in, not restated;
    the names picked one by one are sorted (the face's own index, not a copy of a module's list)."""
    f = Face(face)
    assert sorted(f.spliced) == sorted(f.starred), (
        f"{face}: star-imported {sorted(f.starred)} but splices {sorted(f.spliced)} into __all__"
    )
    assert f.picked == sorted(f.picked), (
        f"{face}: the names __all__ lists one by one are not sorted"
    )
    by_module: dict[str, set[str]] = {}
    for name, (module, attr) in f.static.items():
        if name == attr and module not in f.starred and module.startswith(face + "."):
            by_module.setdefault(module, set()).add(name)
    for module, names in by_module.items():
        try:
            whole = set(_module_all(module))
        except AssertionError:
            continue  # no __all__: the face picks
        if names == whole and module.rpartition(".")[2] not in whole:
            raise AssertionError(
                f"{face}: takes all of {module}.__all__ name by name (star-import it)"
            )


@pytest.mark.parametrize("face", sorted(FACES))
def test_a_lazy_face_uses_the_one_idiom_and_its_table_matches_what_static_tools_read(face):
    f = Face(face)
    if f.getattr_def is None:
        assert f.lazy is None and not f.type_checking, (
            f"{face}: a lazy table or TYPE_CHECKING without __getattr__"
        )
        return
    assert f.lazy, f"{face}: a __getattr__ without a lazy table"
    assert f.type_checking == f.lazy, (
        f"{face}: the TYPE_CHECKING imports and the lazy table disagree: "
        f"{sorted(set(f.type_checking.items()) ^ set(f.lazy.items()))}"
    )
    reference = Face("exitlaw.theory").getattr_def
    assert isinstance(f.getattr_def, ast.Call) and [
        ast.dump(n) for n in (f.getattr_def.func, f.getattr_def.args[0])
    ] == [ast.dump(n) for n in (reference.func, reference.args[0])], (
        f"{face}: __getattr__ differs from the one idiom (see exitlaw.theory)"
    )


def _import_everything_under(package: str) -> None:
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)  # may bind submodules as package attributes


@pytest.mark.parametrize("face", sorted(FACES))
def test_every_name_in_a_faces_all_resolves_to_the_object_its_module_defines(face):
    f = Face(face)
    _import_everything_under(face)  # a submodule bound under an exported name would shadow it
    module = importlib.import_module(face)
    for name in f.all:
        value = getattr(module, name)  # raises if the name does not resolve
        origin = f.origin(name)
        if origin is not None:
            want = getattr(importlib.import_module(origin[0]), origin[1])
            assert value is want, f"{face}.{name} is not {origin[0]}.{origin[1]}"


NO_IMPORT_HOOK = r"""
import importlib, pkgutil, sys
before_meta, before_hooks = list(sys.meta_path), list(sys.path_hooks)
names = []
for package in ("exitlaw", "exitlaw.cli", "exitlaw.theory", "exitlaw.simulate", "exitlaw.engine",
                "exitlaw.figures", "exitlaw.paper_repro"):
    module = importlib.import_module(package)
    names += [m.name for m in pkgutil.walk_packages(module.__path__, package + ".")
              if not m.name.endswith("__main__")]  # running the command line is not importing it
for name in names:
    importlib.import_module(name)
ours = [f for f in [*sys.meta_path, *sys.path_hooks] if type(f).__module__.startswith("exitlaw")
        or getattr(f, "__module__", "").startswith("exitlaw")]
new = [f for f in sys.meta_path if f not in before_meta] + [h for h in sys.path_hooks if h not in before_hooks]
twice = sorted(k for k, m in sys.modules.items() if k.startswith("exitlaw") and getattr(m, "__name__", k) != k)
print(len(names), "modules; exitlaw finders:", ours, "new finders:", new, "modules under a second name:", twice)
sys.exit(1 if ours or twice else 0)
"""


def test_no_exitlaw_module_installs_an_import_hook_or_a_second_name():
    proc = subprocess.run(
        [sys.executable, "-c", NO_IMPORT_HOOK], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_source_file_touches_the_import_machinery():
    offenders = []
    for folder in [*PARTS.values(), ROOT / "exitlaw"]:
        for path in sorted(folder.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for needle in ("meta_path", "path_hooks", "MetaPathFinder", "importlib.abc"):
                if needle in text:
                    offenders.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not offenders, offenders


# Light import paths: a static face must not pull these heavy libraries in through a sibling module.
LIGHT = {
    "exitlaw.theory": ("jax", "torch"),  # the numpy parts, used by the torch engine
    "exitlaw.simulate": ("jax", "scipy", "sympy", "torch"),  # JAX on first law evaluation only
    "exitlaw.engine.models.config": ("torch",),  # `exitlaw --help` reads the model families
    "exitlaw.engine.training.config": ("torch",),  # ... and the training presets
    "exitlaw.engine.bench.compare": ("torch",),  # comparing two result files
}


@pytest.mark.parametrize("module, heavy", sorted(LIGHT.items()))
def test_a_light_import_path_stays_light(module, heavy):
    code = (
        f"import sys, {module}\n"
        f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        "print(loaded); sys.exit(1 if loaded else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# Modules of exitlaw 0.1 that moved once, each importable at its new path only (no alias, no hook).
MOVED = {
    **{
        f"exitlaw.theory.{old}": f"exitlaw.theory.{new}"
        for old, new in {
            "trace_stream": "trace.stream",
            "trace_bench": "trace.bench",
            "summary": "trace.summary",
            "atomic_io": "infra.atomic_io",
            "provenance": "infra.provenance",
            "callable_spec": "infra.callable_spec",
        }.items()
    },
    **{
        f"exitlaw.simulate.{old}": f"exitlaw.simulate.{new}"
        for old, new in {
            # the builders' room (exitlaw.simulate.builders is now that package itself)
            "lab.builders": "builders.trees",
            "caddtree": "builders.caddtree",
            "lab.caddtree": "builders.caddtree",
            "dartree": "builders.dartree",
            "lab.dartree": "builders.dartree",
            "opt_tree": "builders.opt_tree",
            "lab.opt_tree": "builders.opt_tree",
            "decoding": "lab.decoding",
            "models": "lab.models",
            "toy_target": "lab.toy_target",
            "presets": "lab.presets",
            "run": "lab.run",
            "field_lab": "lab.field_lab",
            "fast_samplers": "verifiers.fast",
            "lab.fast_samplers": "verifiers.fast",
            "sharded": "lab.sharded",
            "conformance": "kit.conformance",
            "conformance_boundary": "kit.boundary",
            "conformance_calls": "kit.calls",
            "conformance_cases": "kit.cases",
            "conformance_checks": "kit.checks",
            "conformance_format": "kit.report",
            "verifier_formats": "kit.formats",
            "prove_raw": "prove.raw",
            "prove_rounds": "prove.rounds",
            "prove_sampled": "prove.sampled",
            "symbolic": "prove.symbolic",
            "tree_enum": "prove.tree_enum",
            "uniform_intervals": "prove.uniform_intervals",
            "exittrain_fast": "exittrain.fast",
            "exittrain_mini": "exittrain.mini",
            "exittrain_objectives": "exittrain.objectives",
            "exittrain_sweep": "exittrain.sweep",
            "exittrain_vat": "exittrain.vat",
            "sim_bench": "bench.rounds",
            "verifier_bench": "bench.verifiers",
        }.items()
    },
    **{
        f"exitlaw.engine.{old}": f"exitlaw.engine.{new}"
        for old, new in {
            "target": "models.target",
            "dflash": "models.dflash",
            "attention_window": "models.attention_window",
            "model_config": "models.config",
            "checkpoint": "models.checkpoint",
            "tiny": "models.tiny",
            "tiny_tokenizer": "models.tiny_tokenizer",
            "device_tree": "decode.device_tree",
            # the builders' room (exitlaw.engine.builders is now that package itself)
            "decode.builders": "builders.single",
            "verifiers": "decode.verifiers",
            "batch_decode": "decode.batch_generate",
            "batch_draft": "decode.batch_draft",
            "batch_tree": "decode.batch_tree",
            "batch_verifiers": "decode.verifiers",
            # one module per verifier (single-tree and batched forms side by side)
            "decode.batch_verifiers": "decode.verifiers",
            "timing": "decode.timing",
            "work_bounds": "decode.work_bounds",
            "exittrain": "training.exittrain",
            "exittrain_batch": "training.batch",
            "exittrain_law": "training.law",
            "objectives": "training.objectives",
            "train_checkpoint": "training.checkpoint",
            "train_config": "training.config",
            "train_data": "training.data",
            "train_loop": "training.loop",
            "training_run": "training.run",
            "draft_opd": "training.draft_opd",
            "vat": "training.vat",
            "continuation_server": "training.continuation_server",
            "bench_compare": "bench.compare",
            "batch_bench": "bench.batch",
            "verifier_bench": "bench.verifiers",
            "gpu_check": "bench.gpu_check",
            "prompt_encoding": "prompts.encoding",
            "prompt_records": "prompts.records",
        }.items()
    },
    **{
        f"exitlaw.paper_repro.{old}": f"exitlaw.paper_repro.{new}"
        for old, new in {
            "mini_corpus": "mini.corpus",
            "mini_eval": "mini.evaluate",
            "mini_report": "mini.report",
            "mini_stats": "mini.stats",
            "mini_table": "mini.table",
            "mini_target": "mini.target",
        }.items()
    },
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_a_moved_module_lives_at_its_new_path_only(old, new):
    module = importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new
    assert importlib.util.find_spec(old) is None, f"{old} still imports (an alias?)"


def test_the_documented_paths_work_from_a_fresh_interpreter():
    code = (
        "from exitlaw.simulate.prove.sampled import without_replacement_rule\n"
        "from exitlaw.simulate.lab.sharded import tev_samples\n"
        "import exitlaw.engine.decode.dispatch as v\n"
        "from exitlaw.engine.decode import generate, DecodeConfig\n"
        "from exitlaw.engine.bench import run_bench\n"
        "from exitlaw.paper_repro.mini import run_mini, MiniConfig\n"
        "from exitlaw.theory.trace import read_trace\n"
        "from exitlaw.theory import load_callable, CallableSpecError\n"
        "from exitlaw.theory.infra import atomic_write_text, git_commit\n"
        "from exitlaw.simulate.verifiers import FAST_SAMPLERS, tev_many\n"
        "assert callable(v.verify) and callable(generate) and callable(without_replacement_rule)\n"
        "assert tev_samples.__module__ == 'exitlaw.simulate.lab.sharded'\n"
        "assert tev_many.__module__ == 'exitlaw.simulate.verifiers.fast'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_name_that_never_existed_is_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("exitlaw.simulate.no_such_module")
    with pytest.raises(AttributeError, match="no attribute"):
        import exitlaw.engine.decode as decode

        decode.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute"):
        import exitlaw.theory as theory

        theory.no_such_name  # noqa: B018


def test_the_cli_loads_a_verifier_by_its_module_path(capsys):
    from exitlaw.cli import main

    rc = main(
        [
            "prove",
            "exitlaw.simulate.prove.sampled:without_replacement_rule",
            "--mode",
            "marginal",
            "--max-nodes",
            "2",
            "--vocab",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out


def test_the_lazy_table_reads_one_entry_per_module_with_renames_and_refuses_a_slip():
    table = lazy_table(
        {"decode.loop": "generate, DecodeConfig", "decode.verifiers": "KINDS as KINDS2"}
    )
    assert table == {
        "generate": ("decode.loop", "generate"),
        "DecodeConfig": ("decode.loop", "DecodeConfig"),
        "KINDS2": ("decode.verifiers", "KINDS"),
    }
    for bad in ({"m": "a b"}, {"m": "a,"}, {"m": "a as"}, {"m": "a", "n": "b as a"}):
        with pytest.raises(ValueError):
            lazy_table(bad)
