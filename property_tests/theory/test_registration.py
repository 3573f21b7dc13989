"""One slot per name (theory/infra/registration.py) and the four backend tables that use it
(docs/architecture.md §6): a second module can never claim a registered name silently."""

import sys

import pytest

from exitlaw.theory.infra.registration import import_every_module, register_once


def _fn(qualname: str, module: str = "planted.module"):
    def fn():
        return qualname

    fn.__qualname__ = qualname
    fn.__module__ = module
    return fn


def test_the_first_function_takes_the_slot_and_the_same_one_again_replaces_it():
    table = {}
    first = _fn("verify_x")
    assert register_once(table, "x", "verifier 'x'")(first) is first
    assert table == {"x": first}
    reloaded = _fn("verify_x")  # a reloaded module: a new object, same module and qualified name
    register_once(table, "x", "verifier 'x'")(reloaded)
    assert table["x"] is reloaded


@pytest.mark.parametrize(
    "other", [_fn("verify_y"), _fn("verify_x", module="another.module")], ids=["name", "module"]
)
def test_a_different_function_is_refused_and_the_slot_kept(other):
    table = {}
    first = _fn("verify_x")
    register_once(table, "x", "verifier 'x'")(first)
    with pytest.raises(
        ValueError, match=r"verifier 'x' is already registered: planted\.module\.verify_x"
    ):
        register_once(table, "x", "verifier 'x'")(other)
    assert table == {"x": first}


def test_names_are_independent_slots():
    table = {}
    register_once(table, "x", "x")(_fn("a"))
    register_once(table, "y", "y")(_fn("b"))
    assert sorted(table) == ["x", "y"]


def _refused(decorate) -> None:
    """Registering a planted function under a name that already has one is refused."""
    with pytest.raises(ValueError, match="already registered"):
        decorate(_fn("impostor"))


def test_the_simulator_tables_refuse_a_second_function():
    from exitlaw.simulate.builders.table import SIM_BUILDERS, sim_builder
    from exitlaw.simulate.verifiers.table import TABLES, sim_verifier

    real = TABLES["simulator"]["predraw"]
    _refused(sim_verifier("predraw"))
    assert TABLES["simulator"]["predraw"] is real
    real_builder = SIM_BUILDERS["ddtree"]
    _refused(sim_builder("ddtree"))
    assert SIM_BUILDERS["ddtree"] is real_builder


def test_the_engine_tables_refuse_a_second_function():
    from exitlaw.engine.builders.table import ENGINE_BUILDERS, engine_builder
    from exitlaw.engine.decode.verifiers.table import BATCHED, SINGLE, engine_verifier

    for table, decorate in (
        (SINGLE, engine_verifier("tev")),
        (BATCHED, engine_verifier("tev", batched=True)),
    ):
        real = table["tev"]
        _refused(decorate)
        assert table["tev"] is real
    real_builder = ENGINE_BUILDERS["ddtree"]
    _refused(engine_builder("ddtree"))
    assert ENGINE_BUILDERS["ddtree"] is real_builder


def test_every_module_of_a_package_is_imported(tmp_path, monkeypatch):
    package = tmp_path / "planted_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("LOADED = []\n")
    for name in ("alpha", "beta"):
        (package / f"{name}.py").write_text(
            f"from planted_pkg import LOADED\nLOADED.append({name!r})\n"
        )
    (package / "notes.txt").write_text("not a module")
    monkeypatch.syspath_prepend(str(tmp_path))
    import planted_pkg

    import_every_module("planted_pkg", planted_pkg.__path__)
    assert sorted(planted_pkg.LOADED) == ["alpha", "beta"]
    for name in ("planted_pkg", "planted_pkg.alpha", "planted_pkg.beta"):
        monkeypatch.delitem(sys.modules, name)
