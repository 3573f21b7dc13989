"""A contributor adds a verifier, a builder or a sampling filter by the files docs/architecture.md §6
says, and nothing else: each is planted in a scratch copy of the package (its files written there,
nothing else edited), the number of source files that differ from the checkout is counted, and a
fresh interpreter importing the copy runs the planted name through every place that offers it.

* a verifier: one module per backend (``engine/decode/verifiers/``, ``simulate/verifiers/``) plus its
  registry entry -- through the engine's single and batched dispatch, the simulator, the conformance
  kit, the figures' colours and the latency figure's stages, and the command line's choices;
* a builder: one module per backend plus its registry entry -- the engine's builder table and a
  decoding round's build, the simulator's table, ``SimConfig`` and the command line;
* a sampling filter: two files (its record and field in ``theory/sampling_settings.py``, its torch rule
  in ``engine/decode/sampling_settings.py``) -- ``SamplingSettings``, the exact / float64 / torch keep
  masks (equal on a row), the command line's flag, the server's request fields.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = {"exitlaw": "exitlaw", "theory": "exitlaw/theory", "simulate": "exitlaw/simulate"}
PARTS.update(engine="exitlaw/engine", figures="exitlaw/figures", paper_repro="exitlaw/paper_repro")
SKIP = shutil.ignore_patterns("__pycache__", "results", "coq", "*.png", "*.pdf")


@pytest.fixture
def scratch(tmp_path):
    """The package laid out under ``tmp_path/site`` as it imports (``exitlaw/theory`` ...)."""
    site = tmp_path / "site"
    for folder, dest in PARTS.items():
        shutil.copytree(
            ROOT / folder,
            site / dest,
            ignore=SKIP if folder != "exitlaw" else shutil.ignore_patterns("__pycache__", *PARTS),
        )
    return site


def touched(site: Path) -> set[str]:
    """Source files of the scratch copy that are new or differ from the checkout's."""
    out = set()
    for folder, dest in PARTS.items():
        for path in (site / dest).rglob("*.py"):
            rel = path.relative_to(site / dest)
            if folder == "exitlaw" and rel.parts[0] in PARTS:
                continue
            original = ROOT / folder / rel
            if not original.exists() or not filecmp.cmp(path, original, shallow=False):
                out.add(f"{folder}/{rel}")
    return out


def edit(site: Path, rel: str, old: str, new: str) -> None:
    dest = site / PARTS[rel.split("/")[0]] / rel.split("/", 1)[1]
    text = dest.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{rel}: anchor {old!r} not found once"
    dest.write_text(text.replace(old, new), encoding="utf-8")


def write(site: Path, rel: str, text: str) -> None:
    (site / PARTS[rel.split("/")[0]] / rel.split("/", 1)[1]).write_text(text, encoding="utf-8")


def run_in(site: Path, code: str) -> str:
    """Run ``code`` in a fresh interpreter that imports ``exitlaw`` from the scratch copy."""
    head = f"import sys; sys.path.insert(0, {str(site)!r})\nimport exitlaw\n"
    head += f"assert exitlaw.__file__.startswith({str(site)!r}), exitlaw.__file__\n"
    proc = subprocess.run(
        [sys.executable, "-c", head + code], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


# ----- a verifier ---------------------------------------------------------------------------------------
REGISTRY_ANCHOR = "VERIFIERS: tuple[Verifier, ...] = (\n"
VERIFIER_ENTRY = """    Verifier(
        "planted",
        FIXED_TREE,
        saturating=True,
        reads=(TARGET_ROWS, UNIFORMS),
        summary="a planted verifier: predraw under another name",
        label="planted",
        color="#123456",
        engine_rows="all",
        engine_tree="walk",
    ),
"""
ENGINE_VERIFIER = '''"""A planted verifier: predraw's forms under another name."""

from exitlaw.engine.decode.verifiers.predraw import verify_batch_predraw, verify_predraw
from exitlaw.engine.decode.verifiers.table import engine_verifier


@engine_verifier("planted")
def verify_planted(dt, logits, temperature, gens):
    return verify_predraw(dt, logits, temperature, gens)


@engine_verifier("planted", batched=True)
def verify_batch_planted(bt, logits, temperature, gens):
    return verify_batch_predraw(bt, logits, temperature, gens)
'''
SIM_VERIFIER = '''"""A planted verifier: predraw's simulator forms under another name."""

from exitlaw.theory.registry import PROCEDURE

from exitlaw.simulate.verifiers.procedures import predraw_procedure
from exitlaw.simulate.verifiers.sampling import predraw
from exitlaw.simulate.verifiers.table import sim_verifier


@sim_verifier("planted")
def planted(tree, probs, rng):
    return predraw(tree, probs, rng)


@sim_verifier("planted", PROCEDURE)
def planted_procedure(tree, rows, rand):
    return predraw_procedure(tree, rows, rand)
'''
VERIFIER_CHECK = """
import argparse
import numpy as np, torch
from exitlaw.theory import DraftTree, SamplingSettings
from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import DISPATCH, verify, verify_batch
from exitlaw.engine.decode.verifiers import VerifierGenerators, engine_names
assert "planted" in DISPATCH and "planted" in engine_names(batched=True), tuple(DISPATCH)
g = torch.Generator().manual_seed(0)
rows = torch.log_softmax(torch.randn(3, 9, generator=g) * 2, dim=-1)
trees = [build_ddtree(rows, b, 0)[0] for b in (5, 7)]
logits = torch.randn(2, max(t.num_nodes for t in trees), 9, generator=g)
s = SamplingSettings(0.9, top_k=6)
for seed in range(5):
    dt = to_device_tree(trees[0])
    one = verify("planted", dt, logits[0, : trees[0].num_nodes], s, VerifierGenerators(seed))
    ref = verify("predraw", dt, logits[0, : trees[0].num_nodes], s, VerifierGenerators(seed))
    assert one == ref, (one, ref)
    bt = to_batch_tree(trees)
    both = verify_batch("planted", bt, logits[:, : bt.width], s, VerifierGenerators(seed))
    assert both == verify_batch("predraw", bt, logits[:, : bt.width], s, VerifierGenerators(seed))

from exitlaw.simulate.lab.presets import VERIFIERS, SimConfig, verifier_fn
from exitlaw.simulate.kit.conformance import EXACT_AND_SATURATING, run_kit
assert "planted" in VERIFIERS
SimConfig.from_dict(dict(verifier="planted", temperature=1.0))
tree = DraftTree(np.array([-1, 0, 0, 1]), np.array([0, 1, 2, 0]))
probs = np.full((4, 3), 1 / 3)
a = verifier_fn("planted")(tree, probs, np.random.default_rng(3))
assert a == verifier_fn("predraw")(tree, probs, np.random.default_rng(3))
rep = run_kit(verifier_fn("planted"), name="planted", seed=1)
assert rep.verdict == EXACT_AND_SATURATING, rep.failure

from exitlaw.figures.style import COLORS
from exitlaw.figures import verifier_latency
assert COLORS["planted"] == "#123456" and "planted" in verifier_latency.STAGES
assert verifier_latency.BAR_COLORS["planted"] == "#123456"

from exitlaw.cli import build_parser
parser = build_parser()
args = parser.parse_args(["bench", "verifiers", "--verifier", "planted,tev"])
assert args.verifier == ["planted", "tev"]
batch = ["bench", "batch", "--target", "t", "--draft", "d", "--verifier", "planted"]
assert parser.parse_args(batch).verifier == ["planted"]
assert parser.parse_args(["simulate", "run", "--verifier", "planted"]).verifier == "planted"
print("ok")
"""


def test_a_verifier_is_one_module_per_backend_plus_its_registry_entry(scratch):
    edit(scratch, "theory/registry.py", REGISTRY_ANCHOR, REGISTRY_ANCHOR + VERIFIER_ENTRY)
    write(scratch, "engine/decode/verifiers/planted.py", ENGINE_VERIFIER)
    write(scratch, "simulate/verifiers/planted.py", SIM_VERIFIER)
    assert touched(scratch) == {
        "theory/registry.py",
        "engine/decode/verifiers/planted.py",
        "simulate/verifiers/planted.py",
    }
    assert run_in(scratch, VERIFIER_CHECK).strip() == "ok"


def test_a_verifier_module_without_its_registry_entry_is_refused_by_name(scratch):
    write(scratch, "engine/decode/verifiers/planted.py", ENGINE_VERIFIER)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(scratch)!r})\n"
            "import exitlaw.engine.decode.verifiers",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "unknown verifier 'planted'" in proc.stderr, proc.stderr


# ----- a builder ----------------------------------------------------------------------------------------
BUILDER_ANCHOR = "BUILDERS: tuple[Builder, ...] = (\n"
BUILDER_ENTRY = '    Builder("planted-chain", "position-wise", "a planted builder: the chain"),\n'
ENGINE_BUILDER = '''"""A planted builder: the chain under another name."""

from exitlaw.engine.builders.single import build_chain
from exitlaw.engine.builders.table import engine_builder


@engine_builder("planted-chain")
def build_planted(draft_logprobs, budget, root_token):
    return build_chain(draft_logprobs, root_token)
'''
SIM_BUILDER = '''"""A planted builder: the simulator's chain under another name, its length a setting of its own."""

from dataclasses import dataclass

from exitlaw.simulate.builders.table import sim_builder
from exitlaw.simulate.builders.trees import chain


@dataclass(frozen=True)
class PlantedSettings:
    length: int = 2


@sim_builder("planted-chain", settings=PlantedSettings)
def make_planted(cfg, target, pos, ar, settings):
    return lambda c, rng: chain(pos.marginals(c, cfg.horizon), settings.length)
'''
BUILDER_CHECK = """
import numpy as np, torch
from exitlaw.engine.builders import BUILDERS, engine_builder_names
rows = torch.log_softmax(torch.randn(3, 9, generator=torch.Generator().manual_seed(1)), -1)
assert "planted-chain" in engine_builder_names()
tree, logq = BUILDERS["planted-chain"](rows, 5, 7)
ref, _ = BUILDERS["chain"](rows, 5, 7)
assert list(tree.token) == list(ref.token) and list(tree.parent) == list(ref.parent)

from exitlaw.simulate.lab.presets import BUILDERS as SIM, SimConfig
assert "planted-chain" in SIM
flat = dict(vocab=16, horizon=3, budget=5, rounds=2, builders=["chain", "planted-chain"])
assert SimConfig.from_dict(flat).to_dict()["planted_chain_length"] == 2  # its settings' default
cfg = SimConfig.from_dict({**flat, "planted_chain_length": 3})  # the flat key of its setting
assert cfg.builder_settings("planted-chain").length == 3
assert SimConfig.from_dict(cfg.to_dict()) == cfg
target = cfg.target.model()
pos, ar = cfg.drafter.models(target)
a = cfg.make_builder("planted-chain", target, pos, ar)((1, 2), np.random.default_rng(0))
b = cfg.make_builder("chain", target, pos, ar)((1, 2), np.random.default_rng(0))
assert list(a.tree.token) == list(b.tree.token)

from exitlaw.cli import build_parser
args = build_parser().parse_args(["simulate", "run", "--builders", "chain,planted-chain"])
print("ok")
"""


def test_a_builder_is_one_module_per_backend_plus_its_registry_entry(scratch):
    edit(scratch, "theory/registry.py", BUILDER_ANCHOR, BUILDER_ANCHOR + BUILDER_ENTRY)
    write(scratch, "engine/builders/planted.py", ENGINE_BUILDER)
    write(scratch, "simulate/builders/planted.py", SIM_BUILDER)
    assert touched(scratch) == {
        "theory/registry.py",
        "engine/builders/planted.py",
        "simulate/builders/planted.py",
    }
    assert run_in(scratch, BUILDER_CHECK).strip() == "ok"


# ----- a sampling filter --------------------------------------------------------------------------------
FIELD_ANCHOR = "    min_p: float | None = None\n"
FILTER_FIELD = "    floor_p: float | None = None\n"
ORDERS = ('VLLM_ORDER = ("min_p", "top_k", "top_p")', 'HF_ORDER = ("top_k", "top_p", "min_p")')
RECORDS_ANCHOR = "FILTER_RECORDS: tuple[Filter, ...] = (\n"
FILTER_RECORD = """    Filter(
        "floor_p",
        float,
        "in [0, 1)",
        lambda f: 0 <= f < 1,
        off=(None, 0.0),
        neutral=(0,),
        flag="--floor-p",
        metavar="F",
        help="keep tokens with probability >= F (the most likely always)",
        expected="a floor-p in [0, 1)",
        exact=lambda p, keep, f: [
            k and (x >= Fraction(f) * sum(z for z, kk in zip(p, keep) if kk)
                   or x == max(z for z, kk in zip(p, keep) if kk))
            for x, k in zip(p, keep)
        ],
        keep=lambda live, f: live >= np.minimum(
            f * live.sum(axis=-1, keepdims=True), live.max(axis=-1, keepdims=True)
        ),
    ),
"""
TORCH_RULE = """

@torch_filter("floor_p")
def floor_p_keep(live: torch.Tensor, f: float) -> torch.Tensor:
    bar = torch.minimum(live.sum(dim=-1, keepdim=True) * f, live.amax(dim=-1, keepdim=True))
    return live >= bar
"""
FILTER_CHECK = """
import argparse
from fractions import Fraction
import numpy as np, torch
from exitlaw.theory.sampling_settings import (
    FILTERS, SamplingSettings, keep_mask, process_rows_exact,
)
from exitlaw.engine.decode.sampling_settings import filter_logits, keep_mask as torch_keep
assert "floor_p" in FILTERS
s = SamplingSettings(1.0, floor_p=0.2)
assert s.active() == ("floor_p",)
row = [Fraction(5, 10), Fraction(3, 10), Fraction(15, 100), Fraction(5, 100)]
exact = process_rows_exact([row], s)[0]
assert [x > 0 for x in exact] == [True, True, False, False], exact
w = np.array([[float(x) for x in row]])
assert keep_mask(w, s).tolist() == [[True, True, False, False]]
assert torch_keep(torch.tensor(w, dtype=torch.float64), s).tolist() == [[True, True, False, False]]
z = torch.log(torch.tensor(w))
assert torch.isinf(filter_logits(z, s)).tolist() == [[False, False, True, True]]
try:
    SamplingSettings(1.0, floor_p=1.5)
    raise SystemExit("floor_p=1.5 accepted")
except ValueError as err:
    assert "floor_p must be in [0, 1)" in str(err), err

from exitlaw.cli.args import add_sampling_args, sampling_settings_from
p = argparse.ArgumentParser()
add_sampling_args(p)
got = sampling_settings_from(p.parse_args(["--floor-p", "0.2"]), 0.8)
assert got.floor_p == 0.2 and got.temperature == 0.8
try:
    p.parse_args(["--floor-p", "2"])
    raise AssertionError("--floor-p 2 accepted")
except SystemExit as err:
    assert err.code == 2

from exitlaw.engine.serve import requests
assert requests.NEUTRAL["floor_p"] == (0,)
assert requests._sampling_settings({"floor_p": 0.2}, 1.0).floor_p == 0.2
assert not requests._sampling_settings({"floor_p": 0}, 1.0).filtered  # its neutral value: off
print("ok")
"""


def test_a_sampling_filter_is_two_files(scratch):
    edit(scratch, "theory/sampling_settings.py", FIELD_ANCHOR, FIELD_ANCHOR + FILTER_FIELD)
    edit(scratch, "theory/sampling_settings.py", RECORDS_ANCHOR, RECORDS_ANCHOR + FILTER_RECORD)
    for order in ORDERS:
        edit(scratch, "theory/sampling_settings.py", order, order[:-1] + ', "floor_p")')
    dest = scratch / "exitlaw/engine/decode/sampling_settings.py"
    text = dest.read_text(encoding="utf-8")
    anchor = "\n\ndef keep_mask("
    assert text.count(anchor) == 1
    dest.write_text(text.replace(anchor, TORCH_RULE + anchor), encoding="utf-8")
    assert touched(scratch) == {"theory/sampling_settings.py", "engine/decode/sampling_settings.py"}
    assert run_in(scratch, FILTER_CHECK).strip() == "ok"
