"""Architecture rules of DESIGN.md section 2 that a refactor could silently break."""

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
    proc = subprocess.run([sys.executable, "-c", ENGINE_IMPORTS_NO_JAX], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_theory_numpy_parts_import_without_jax():
    code = ("import sys; import exitlaw.theory as t; t.DraftTree.chain([1]); "
            "sys.exit(1 if 'jax' in sys.modules else 0)")
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

    for mod in pkgutil.iter_modules(engine.__path__):
        importlib.import_module(f"exitlaw.engine.{mod.name}")  # may bind submodules as package attributes
    for name, (module, attr) in engine._EXPORTS.items():
        want = getattr(importlib.import_module(f"exitlaw.engine.{module}"), attr)
        assert getattr(engine, name) is want, f"exitlaw.engine.{name} is shadowed (a submodule of that name?)"


def test_cli_help_imports_neither_torch_nor_jax():
    code = ("import sys; from exitlaw.cli import build_parser; build_parser(); "
            "heavy = [m for m in ('torch', 'jax') if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
