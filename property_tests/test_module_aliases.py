"""Modules that moved into sub-packages keep their former dotted paths: the same module objects under
their new names, so users' imports and `--verifier module:callable` command lines do not break."""

import importlib
import subprocess
import sys

import pytest

from exitlaw.theory.module_faces import _MovedModuleFinder


def _aliases():
    import exitlaw.engine  # noqa: F401  (installs the parts' finders)
    import exitlaw.paper_repro  # noqa: F401
    import exitlaw.simulate  # noqa: F401
    import exitlaw.theory  # noqa: F401,E501

    out = {}
    for finder in sys.meta_path:
        if isinstance(finder, _MovedModuleFinder):
            out.update(finder.moved)
    return out


def test_every_part_that_moved_modules_installs_its_aliases():
    parts = {old.split(".")[1] for old in _aliases()}
    assert parts == {"theory", "simulate", "engine", "paper_repro"}
    assert len(_aliases()) >= 70


@pytest.mark.parametrize("old, new", sorted(_aliases().items()))
def test_a_former_path_imports_the_moved_module_itself(old, new):
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new


def test_documented_former_paths_work_from_a_fresh_interpreter():
    code = (
        "from exitlaw.simulate.prove_sampled import without_replacement_rule\n"
        "from exitlaw.simulate.sharded import tev_samples\n"
        "import exitlaw.engine.verifiers as v, exitlaw.engine.decode.verifiers as w\n"
        "from exitlaw.engine.decode import generate, DecodeConfig\n"
        "from exitlaw.engine.bench import run_bench\n"
        "from exitlaw.paper_repro.mini import run_mini, MiniConfig\n"
        "from exitlaw.theory.trace import read_trace\n"
        "assert v is w and callable(generate) and tev_samples.__module__ == 'exitlaw.simulate.lab.sharded'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_name_that_never_existed_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("exitlaw.simulate.no_such_module")
    with pytest.raises(AttributeError, match="no attribute"):
        import exitlaw.engine.decode as decode

        decode.no_such_name  # noqa: B018


def test_the_cli_loads_a_verifier_by_its_former_path(capsys):
    from exitlaw.cli import main

    rc = main(
        [
            "prove",
            "exitlaw.simulate.prove_sampled:without_replacement_rule",
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
