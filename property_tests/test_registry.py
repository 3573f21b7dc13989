"""One registry of names and facts (exitlaw.theory.registry): every verifier, method and builder a
backend's table implements is offered in every place that offers that backend's names (simulator
presets and tables, the engine's one dispatch table, the bench lists, the command line's choices,
paper_repro, the figures' colours), every name those places offer is registered, and the registry's
facts agree with the code."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from exitlaw.theory import registry
from exitlaw.theory.registry import (
    FAST,
    FIXED_TREE,
    PROCEDURE,
    SAMPLED_DRAFT,
    SETTINGS,
    SIMULATOR,
    builder_names,
    method_names,
    verifier_names,
)
from exitlaw.theory.sampling_settings import SamplingSettings

ROOT = Path(__file__).resolve().parent.parent


def engine(**facts):
    """The engine's verifiers, read from its decorator table (registry order, filtered by facts)."""
    from exitlaw.engine.decode.verifiers import engine_names

    return engine_names(**facts)


def sim(place, **facts):
    """The verifiers with a form in a simulator table (``place``), filtered by facts."""
    from exitlaw.simulate.verifiers.table import implemented

    return implemented(place, **facts)


def sim_builder_names():
    from exitlaw.simulate.builders.table import sim_builder_names as names

    return names()


def engine_builder_names():
    from exitlaw.engine.builders import engine_builder_names as names

    return names()


VERIFIER_NAMES = set(verifier_names())
METHOD_NAMES = set(method_names())
BUILDER_NAMES = set(builder_names())


# ----- the registry itself ---------------------------------------------------------------------------------
def test_every_name_is_registered_once_and_every_fact_is_from_its_vocabulary():
    for entries in (registry.VERIFIERS, registry.METHODS, registry.BUILDERS):
        names = [e.name for e in entries]
        assert len(names) == len(set(names)), names
    implemented_somewhere = set(engine())
    for place in (SIMULATOR, PROCEDURE, FAST, SETTINGS):
        implemented_somewhere |= set(sim(place))
    for v in registry.VERIFIERS:
        assert v.kind in (FIXED_TREE, SAMPLED_DRAFT), v
        assert v.name in implemented_somewhere, f"{v.name}: registered but implemented nowhere"
        assert v.label.strip() and v.color.startswith("#") and len(v.color) == 7, v
        assert v.engine_rows in (None, "all", "read") and v.engine_tree in (None, "all", "walk"), v
        if v.name in engine():  # the engine calls it: it says how
            assert v.engine_tree is not None and (v.greedy_only or v.engine_rows is not None), v
        if v.kind == SAMPLED_DRAFT:  # saturation is a fixed-tree notion
            assert not v.saturating and v.name not in engine(), v
        if v.twin_of is not None:
            assert registry.verifier(v.twin_of).kind == v.kind, v
    assert set(engine(batched=True)) <= set(engine())
    for m in registry.METHODS:
        if m.builder is not None:
            assert m.builder in engine_builder_names(), m
    for b in registry.BUILDERS:
        if b.sampled_draft_rule is not None:
            assert registry.verifier(b.sampled_draft_rule).kind == SAMPLED_DRAFT, b


def test_queries_filter_by_facts_and_unknown_names_are_refused_with_the_registered_ones():
    assert engine() == ("greedy", "predraw", "residual", "tev")
    assert engine(sampling=True) == ("predraw", "residual", "tev")
    assert engine(batched=True, sequential=False) == ("greedy", "predraw", "tev")
    assert method_names(tree=True) == ("chain", "ddtree")
    assert set(engine_builder_names()) == {"chain", "ddtree"}
    with pytest.raises(ValueError, match="unknown verifier 'sequoia'; registered: greedy"):
        registry.verifier("sequoia")
    with pytest.raises(ValueError, match="unknown simulator place"):
        sim("gpu")
    names = verifier_names()
    assert ["tev", "predraw"] in names and "tev" in names
    assert ["tev", "sequoia"] not in names and "sequoia" not in names


def test_the_registry_imports_nothing_heavy():
    code = (
        "import sys, exitlaw.theory.registry\n"
        "heavy = [m for m in ('torch', 'jax', 'scipy') if m in sys.modules]\n"
        "sys.exit(1 if heavy else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=300).returncode == 0


# ----- the simulator ----------------------------------------------------------------------------------------
def sim_function(name):
    from exitlaw.simulate.verifiers.table import sim_function as fn

    return fn(name)


def test_simulator_presets_offer_exactly_the_registered_names():
    from exitlaw.simulate.builders.table import SIM_BUILDERS
    from exitlaw.simulate.lab import presets

    assert presets.VERIFIERS == sim(SIMULATOR, kind=FIXED_TREE)
    assert presets.BUILDERS == sim_builder_names()
    assert set(SIM_BUILDERS) == set(BUILDER_NAMES)  # every builder runs in the simulator
    for cfg in presets.PRESETS.values():
        assert set(cfg.builders) <= BUILDER_NAMES and cfg.verifier in VERIFIER_NAMES, cfg.name
    for name, rule in presets.SAMPLED_DRAFT_RULES.items():
        assert rule == registry.builder(name).sampled_draft_rule
        assert presets.sampled_verifier_fn(name) is sim_function(rule), name


def test_every_simulator_builder_builds_a_tree_from_the_table():
    from exitlaw.simulate.lab.presets import SimConfig

    cfg = SimConfig.from_dict(
        dict(
            vocab=16,
            horizon=3,
            budget=5,
            caddtree_max_budget=8,
            rounds=2,
            eagle_depth=2,
            static_branching=(2, 2, 1),
        )
    )
    target = cfg.target.model()
    pos, ar = cfg.drafter.models(target)
    for name in sim_builder_names():
        built = cfg.make_builder(name, target, pos, ar)((1, 2), np.random.default_rng(0))
        assert built.tree.num_nodes >= 2, name
    with pytest.raises(ValueError, match="unknown builder 'sequoia'"):
        cfg.make_builder("sequoia", target, pos, ar)


def test_simulator_implementation_tables_hold_the_registered_verifiers():
    from exitlaw.simulate import verifiers
    from exitlaw.simulate.lab.field_lab import RULES as FIELD_COLUMNS
    from exitlaw.simulate.lab.presets import verifier_fn
    from exitlaw.simulate.prove.sampled import RULES as PROVER_RULES
    from exitlaw.simulate.verifiers import with_settings
    from exitlaw.simulate.verifiers.fast import FAST_SAMPLERS
    from exitlaw.simulate.verifiers.table import TABLES

    assert verifiers.PROCEDURES is TABLES[PROCEDURE] and FAST_SAMPLERS is TABLES[FAST]
    for place, table in TABLES.items():
        assert set(table) <= VERIFIER_NAMES, place
        for name, fn in table.items():  # registered where it is defined, a public function there
            assert callable(fn) and not fn.__name__.startswith("_"), (place, name)
            assert fn.__module__.startswith("exitlaw.simulate.verifiers."), (place, name)
    for name in sim(SIMULATOR, kind=FIXED_TREE):
        assert verifier_fn(name) is TABLES[SIMULATOR][name], name
    settings_forms = {n for n in with_settings.__all__ if n.endswith("_settings")}
    assert {f.__name__ for f in TABLES[SETTINGS].values()} == settings_forms
    rules = {v.rule: v.name for v in registry.VERIFIERS if v.rule}
    assert set(verifiers.RULES) == set(rules)
    assert set(PROVER_RULES) <= set(rules) | VERIFIER_NAMES
    labels = {v.field_label for v in registry.VERIFIERS if v.field_label}
    assert set(FIELD_COLUMNS) == labels


# ----- the engine -------------------------------------------------------------------------------------------
def test_the_engine_dispatch_table_holds_the_registered_engine_verifiers_single_and_batched():
    from exitlaw.engine.decode import verifiers
    from exitlaw.engine.decode.dispatch import DISPATCH, KINDS
    from exitlaw.engine.decode.verifiers.table import BATCHED, SINGLE

    assert tuple(DISPATCH) == engine() == KINDS == verifiers.KINDS
    for name, entry in DISPATCH.items():
        fact = registry.verifier(name)
        assert entry.name == name and callable(entry.single)
        assert (entry.rows, entry.tree) == (fact.engine_rows, fact.engine_tree)
        assert entry.single is SINGLE[name] and entry.batched is BATCHED.get(name)
        # registered where it is defined: the verifier's own module holds both forms
        module = f"exitlaw.engine.decode.verifiers.{name}"
        assert entry.single.__module__ == module, (name, entry.single.__module__)
        assert entry.batched is None or entry.batched.__module__ == module, name
    assert set(SINGLE) == set(KINDS) and set(BATCHED) == set(engine(batched=True))


def test_engine_methods_and_builders_are_the_registered_ones():
    from exitlaw.engine.builders import BUILDERS
    from exitlaw.engine.decode.loop import METHODS, DecodeConfig

    assert METHODS == method_names()
    assert tuple(BUILDERS) == engine_builder_names()
    for m in method_names():
        DecodeConfig(method=m)
        if registry.method(m).builder:
            assert registry.method(m).builder in BUILDERS
    for v in engine():
        DecodeConfig(verifier=v)
    with pytest.raises(ValueError, match="unknown method"):
        DecodeConfig(method="sequoia")


def test_every_registered_engine_builder_builds_single_and_batched_trees():
    import torch

    from exitlaw.engine.builders import BATCHED_BUILDERS, BUILDERS, build_trees_batch

    rows = torch.log_softmax(torch.randn(2, 3, 10, generator=torch.Generator().manual_seed(1)), -1)
    for name in engine_builder_names():
        tree, logq = BUILDERS[name](rows[0], 5, 7)
        assert tree.num_nodes >= 2 and len(logq) == tree.num_nodes, name
        if name in BATCHED_BUILDERS:
            trees, _ = build_trees_batch(rows, name, 5, [7, 7], [True, True])
            assert np.array_equal(trees[0].parent, tree.parent), name
            assert np.array_equal(trees[0].token, tree.token), name
    with pytest.raises(ValueError, match="unknown tree method"):
        build_trees_batch(rows, "sequoia", 5, [7, 7], [True, True])


def test_a_walk_only_device_tree_serves_every_verifier_whose_fact_says_walk():
    """The ``engine_tree`` fact decides which device tensors a round builds (``loop.tree_parts``): a
    verifier marked ``walk`` gives the same result on a walk-only tree as on the full one."""
    import torch

    from exitlaw.engine.builders.single import build_ddtree
    from exitlaw.engine.decode.device_tree import to_device_tree
    from exitlaw.engine.decode.dispatch import DISPATCH, verify
    from exitlaw.engine.decode.loop import DecodeConfig, tree_parts
    from exitlaw.engine.decode.verifiers import VerifierGenerators

    g = torch.Generator().manual_seed(0)
    rows = torch.log_softmax(torch.randn(4, 12, generator=g) * 2, dim=-1)
    tree, logq = build_ddtree(rows, 9, 0)
    logits = torch.randn(tree.num_nodes, 12, generator=g)
    for name, entry in DISPATCH.items():
        assert tree_parts(DecodeConfig(verifier=name, settings=SamplingSettings(1.0))) == entry.tree
        assert tree_parts(DecodeConfig(verifier=name, settings=SamplingSettings(0.0))) == "walk"
        if entry.tree != "walk":
            continue
        full = verify(
            name,
            to_device_tree(tree, "cpu", logq),
            logits,
            SamplingSettings(1.0),
            VerifierGenerators(3),
        )
        walk = to_device_tree(tree, "cpu", logq, parts="walk")
        assert verify(name, walk, logits, SamplingSettings(1.0), VerifierGenerators(3)) == full, (
            name
        )


# ----- bench lists, paper_repro, figures ---------------------------------------------------------------------
def test_bench_lists_offer_registered_names_and_every_one_the_registry_puts_there():
    import inspect

    from exitlaw.engine.bench import batch, side_by_side
    from exitlaw.engine.bench.verifiers import BENCH_KINDS

    assert BENCH_KINDS == engine(sampling=True)
    default = inspect.signature(batch.run_batch_verifier_bench).parameters["kinds"].default
    assert tuple(default) == engine(batched=True, sequential=False)
    params = inspect.signature(batch.run_batch_decode_bench).parameters
    assert set(params["verifiers"].default) <= set(engine(batched=True))
    assert params["method"].default in method_names(tree=True)
    assert set(side_by_side.SideBySideConfig().t1_verifiers) <= set(engine())


def test_paper_repro_and_figures_offer_the_registered_kit_verifiers():
    from exitlaw.figures import verifier_equivalence, verifier_latency
    from exitlaw.figures.style import COLORS
    from exitlaw.paper_repro import ledger_inputs, reproduce
    from exitlaw.paper_repro.mini.exittrain.paper_regime import PaperRegimeConfig
    from exitlaw.paper_repro.mini.pipeline import MiniConfig

    kit = sim(PROCEDURE, kind=FIXED_TREE, sampling=True, saturating=True)
    assert reproduce.VERIFIERS == ledger_inputs.KIT_VERIFIERS == kit
    assert verifier_equivalence.VERIFIERS == sim(FAST, sampling=True)
    assert verifier_latency.STAGES == engine(sampling=True)
    assert set(kit) <= set(COLORS)
    assert all(COLORS[v.name] == v.color for v in registry.VERIFIERS)  # the registry's colours
    assert set(MiniConfig().verifiers) <= set(engine())
    assert PaperRegimeConfig.__dataclass_fields__["verifier"].default in VERIFIER_NAMES


def test_a_verifier_marked_saturating_is_exact_and_saturating_in_the_kits_shipped_checks():
    """The kit's shipped reports (paper_repro) say "exact and saturating" of every saturating verifier
    that samples, and the exact enumeration of each saturating procedure is the block law."""
    from exitlaw.simulate.kit.conformance import EXACT_AND_SATURATING
    from exitlaw.simulate.verifiers import implementation_block_law
    from exitlaw.theory import DraftTree, reference_block_law

    checks = ROOT / "paper_repro" / "results" / "ledger_inputs" / "checks"
    for name in sim(PROCEDURE, kind=FIXED_TREE, saturating=True, sampling=True):
        report = json.loads((checks / f"{name}.json").read_text(encoding="utf-8"))
        assert report["verdict"] == EXACT_AND_SATURATING, name
    tree = DraftTree(np.array([-1, 0, 0, 1]), np.array([0, 1, 2, 0]))
    soft = [[Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)], [Fraction(1, 3)] * 3] * 2
    onehot = [[Fraction(0), Fraction(1), Fraction(0)], [Fraction(1), Fraction(0), Fraction(0)]] * 2
    for name in sim(PROCEDURE, saturating=True):
        rows = onehot if registry.verifier(name).greedy_only else soft
        got = implementation_block_law(name, tree, rows, one=Fraction(1))
        assert got == reference_block_law(tree, rows), name


def test_the_greedy_only_fact_is_what_the_simulator_enforces():
    from exitlaw.simulate.lab.presets import SimConfig

    for name in sim(SIMULATOR, kind=FIXED_TREE):
        if registry.verifier(name).greedy_only:
            with pytest.raises(ValueError, match="T=0"):
                SimConfig.from_dict(dict(verifier=name, temperature=1.0))
        else:
            SimConfig.from_dict(dict(verifier=name, temperature=1.0))


# ----- the command line -------------------------------------------------------------------------------------
# an option's destination -> the registered names its choices must come from
CLI_KINDS = {"verifier": VERIFIER_NAMES, "verifiers": VERIFIER_NAMES, "method": METHOD_NAMES}
CLI_KINDS.update(builder=BUILDER_NAMES, builders=BUILDER_NAMES)


def _choice_actions(parser: argparse.ArgumentParser, path: str = "exitlaw"):
    """``(command path, action)`` for every option of every (nested) sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _choice_actions(sub, f"{path} {name}")
        else:
            yield path, action


def cli_offered(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Every registered kind -> the names the command line offers as ``choices`` for it."""
    out: dict[str, set[str]] = {"verifier": set(), "method": set(), "builder": set()}
    for _, action in _choice_actions(parser):
        if action.choices is not None and action.dest in CLI_KINDS:
            out[action.dest.rstrip("s")] |= set(action.choices)
    return out


def cli_choice_offenders(parser: argparse.ArgumentParser) -> list[str]:
    """Every verifier / method / builder choice offered on the command line that is not registered, and
    every default outside its option's choices."""
    offenders = []
    for path, action in _choice_actions(parser):
        if action.choices is None or action.dest not in CLI_KINDS:
            continue
        bad = sorted(set(action.choices) - CLI_KINDS[action.dest])
        if bad:
            offenders.append(f"{path} {action.option_strings}: unregistered {bad}")
        default = action.default
        listed = default if isinstance(default, list) else [default]
        if default is not None and not set(listed) <= set(action.choices):
            offenders.append(f"{path} {action.option_strings}: default {default!r} not offered")
    return offenders


def test_every_cli_choice_of_verifier_method_or_builder_is_registered():
    from exitlaw.cli import build_parser

    assert cli_choice_offenders(build_parser()) == []


def test_every_registered_engine_and_simulator_verifier_and_every_method_is_offered_on_the_cli():
    from exitlaw.cli import build_parser

    offered = cli_offered(build_parser())
    assert set(engine()) <= offered["verifier"]
    assert set(sim(SIMULATOR, kind=FIXED_TREE)) <= offered["verifier"]
    assert offered["method"] == METHOD_NAMES


def test_cli_verifier_choices_are_the_registry_queries_of_their_commands():
    from exitlaw.cli import build_parser

    single, batched = engine(), engine(batched=True)
    simulated = sim(SIMULATOR, kind=FIXED_TREE)
    found = {
        (path.split()[-1], action.dest): tuple(action.choices)
        for path, action in _choice_actions(build_parser())
        if action.choices is not None and action.dest in CLI_KINDS
    }
    expected = {  # (the command's last word, the option's dest)
        ("decoding", "verifier"): single,  # bench decoding
        ("verifiers", "verifier"): single,  # bench verifiers
        ("batch", "verifier"): batched,  # bench batch
        ("run", "verifier"): simulated,  # simulate run
        ("simulate", "verifier"): simulated,  # bench simulate
        ("serve", "method"): method_names(),
    }
    assert set(expected) <= set(found), sorted(set(expected) - set(found))
    for key, names in expected.items():
        assert found[key] == tuple(names), key


def test_a_planted_unregistered_verifier_in_a_cli_choice_list_is_found():
    from exitlaw.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    planted = sub.add_parser("planted")
    planted.add_argument("--verifier", choices=(*engine(), "sequoia"))
    found = cli_choice_offenders(parser)
    assert len(found) == 1 and "sequoia" in found[0] and "planted" in found[0], found


def test_a_comma_list_of_registered_names_parses_and_an_unregistered_one_is_refused(capsys):
    """A comma-list option offers the registry's names; its command refuses any other (exit 2)."""
    from exitlaw.cli import build_parser, main

    parser = build_parser()
    args = parser.parse_args(["bench", "verifiers", "--verifier", "tev,predraw"])
    assert args.verifier == ["tev", "predraw"]
    argv = ["bench", "verifiers", "--batch-size", "2", "--budget", "4", "--vocab", "50"]
    assert main([*argv, "--repeats", "1", "--verifier", "tev,sequoia"]) == 2
    err = capsys.readouterr().err
    assert "unknown verifier" in err and "sequoia" in err
    for query in (engine(), method_names()):
        offered = query.checked_by_the_command()
        assert tuple(offered) == tuple(query) and ["sequoia"] in offered
        assert "sequoia" not in offered and query[0] in offered


def test_the_cli_reads_the_engine_verifiers_from_their_decorators_as_the_engine_registers_them():
    """``exitlaw --help`` reads the engine's verifier names from the ``@engine_verifier`` decorators
    in the source (no torch); they are the names the engine registers when its modules load."""
    from exitlaw.cli.offered import declared
    from exitlaw.engine.decode.verifiers.table import BATCHED, SINGLE

    assert declared(batched=False) == set(SINGLE) and declared(batched=True) == set(BATCHED)
    code = (
        "import sys\nfrom exitlaw.cli import build_parser\nbuild_parser()\n"
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=300).returncode == 0


def test_a_bench_command_left_out_of_bench_order_fails_loudly(monkeypatch):
    """A benchmark a command family defines but ``BENCH_ORDER`` omits is an error naming it, not a
    command silently missing from the parser."""
    import exitlaw.cli as cli

    cli.build_parser()  # the shipped order lists every bench command
    monkeypatch.setattr(cli, "BENCH_ORDER", tuple(n for n in cli.BENCH_ORDER if n != "ddtree"))
    with pytest.raises(ValueError, match=r"missing \['ddtree'\]"):
        cli.build_parser()
