"""How a package shows its public names: lazy re-exports, and aliases for modules that moved.

Pure Python (no numpy, no JAX), so every part may use it: a sub-package's ``__init__`` lists its
public names and loads their module on first access (``exitlaw --help`` imports neither torch nor
JAX), and a part keeps the dotted paths of modules that moved into sub-packages importable, e.g.
``exitlaw.simulate.prove_sampled`` is ``exitlaw.simulate.prove.sampled``: the same module object,
whose ``__name__`` and ``__spec__`` stay the new ones.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, exports: Mapping[str, str | tuple[str, str]], former_module: str | None = None
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to ``"module"`` (the
    attribute of the same name) or ``("module", "attr")``, module paths relative to ``package``.

    ``former_module`` (relative): the module this package replaced under the same dotted name (e.g.
    ``exitlaw.engine.decode`` was one module before it became a package); its public names stay
    reachable from the package, so ``from exitlaw.engine.decode import generate`` keeps working.
    """

    def __getattr__(name: str):
        if name in exports:
            spec = exports[name]
            module, attr = spec if isinstance(spec, tuple) else (spec, name)
            return getattr(importlib.import_module(f"{package}.{module}"), attr)
        if former_module is not None and not name.startswith("_"):
            former = importlib.import_module(f"{package}.{former_module}")
            if hasattr(former, name):
                return getattr(former, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        own = vars(sys.modules[package])
        return sorted(set(own) | set(exports))

    return __getattr__, __dir__


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves a former dotted module name to the module that now lives elsewhere (no copy)."""

    def __init__(self, moved: Mapping[str, str]):
        self.moved = dict(moved)  # full former name -> full current name
        self._specs: dict[str, object] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.moved[fullname])

    def create_module(self, spec):
        module = importlib.import_module(self.moved[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # the import system stamped the alias spec on the module: give it its own back
        for alias, current in self.moved.items():
            if current == module.__name__ and alias in self._specs:
                module.__spec__ = self._specs[alias]


def alias_moved_modules(package: str, moved: Mapping[str, str]) -> None:
    """Make ``{package}.{former}`` import as ``{package}.{current}`` for every ``former -> current``
    (both relative to ``package``). Installed once per package; a second call is a no-op."""
    full = {f"{package}.{old}": f"{package}.{new}" for old, new in moved.items()}
    for finder in sys.meta_path:
        if isinstance(finder, _MovedModuleFinder) and set(full) <= set(finder.moved):
            return
    sys.meta_path.append(_MovedModuleFinder(full))
