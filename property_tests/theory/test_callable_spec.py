"""``load_callable``: a ``MODULE:CALLABLE`` spec to the callable, or a CallableSpecError that says what is wrong."""

import sys

import pytest

from exitlaw.theory.infra.callable_spec import CallableSpecError, load_callable


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write ``source`` as an importable module on a temporary ``sys.path`` entry; return its name."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str) -> str:
        name = f"callable_spec_user_{abs(hash(source)) % 10**8}"
        (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    return write


def test_a_good_spec_returns_the_named_object(user_module):
    import exitlaw.simulate.verifiers as verifiers

    assert load_callable("exitlaw.simulate.verifiers:tev") is verifiers.tev
    name = user_module("class Rule:\n    @staticmethod\n    def decide(x):\n        return x + 1\n")
    assert load_callable(f"{name}:Rule.decide")(1) == 2  # a dotted CALLABLE walks attributes


@pytest.mark.parametrize(
    "spec", ["exitlaw.simulate.verifiers", ":tev", "exitlaw.simulate.verifiers:", ""]
)
def test_a_malformed_spec_is_named(spec):
    with pytest.raises(CallableSpecError, match=r"expected MODULE:CALLABLE, got"):
        load_callable(spec)


def test_a_missing_module_is_named():
    with pytest.raises(CallableSpecError, match=r"cannot import module 'no_such_module_xyz_23'"):
        load_callable("no_such_module_xyz_23:f")


@pytest.mark.parametrize("attr", ["no_such_fn", "tev.no_such_attr"])
def test_a_missing_attribute_is_named(attr):
    with pytest.raises(
        CallableSpecError, match=rf"module 'exitlaw.simulate.verifiers' has no attribute '{attr}'"
    ):
        load_callable(f"exitlaw.simulate.verifiers:{attr}")


def test_an_attribute_that_is_not_callable_is_named(user_module):
    name = user_module("TABLE = (1, 2)\n")
    with pytest.raises(CallableSpecError, match=r"is a tuple, not a callable"):
        load_callable(f"{name}:TABLE")


@pytest.mark.parametrize(
    "source,message",
    [
        ("def f(:\n", "syntax error"),
        ("import sys\nsys.exit(3)\n", r"it called sys.exit\(3\) at import"),
        ("raise RuntimeError('broken at import')\n", "RuntimeError at import: broken at import"),
    ],
)
def test_a_module_that_fails_at_import_is_a_named_error_not_an_exit(user_module, source, message):
    name = user_module(source)
    with pytest.raises(CallableSpecError, match=message):
        load_callable(f"{name}:f")
