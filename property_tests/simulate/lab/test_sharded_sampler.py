"""The device-sharded JAX TEV sampler follows the canonical block law and does not depend on the device count."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
from scipy import stats

from exitlaw.simulate.lab.sharded import tev_samples
from exitlaw.theory import DraftTree, block_law
from exitlaw.theory.demo import random_rows, random_tree

ALPHA = 1e-6  # false-failure rate of the chi-square check (fixed seeds: deterministic)


def _case(seed=0, budget=10, vocab=5):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, budget, vocab)
    return tree, random_rows(rng, tree.num_nodes, vocab)


def _chi_square_pvalue(tree, probs, exit_node, bonus):
    joint = np.asarray(block_law(tree, probs)).ravel()
    counts = np.bincount(exit_node * probs.shape[1] + bonus, minlength=joint.size)
    assert counts[joint == 0].sum() == 0, "a sample fell in a zero-probability (exit, bonus) cell"
    n = exit_node.size
    keep = joint * n >= 20  # pool cells by expected count only
    obs = np.append(counts[keep], counts[~keep & (joint > 0)].sum())
    exp = np.append(joint[keep] * n, joint[~keep & (joint > 0)].sum() * n)
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


def test_sharded_tev_follows_the_block_law():
    tree, probs = _case()
    exit_node, bonus = tev_samples(tree, probs, jax.random.key(0), 40_000)
    assert _chi_square_pvalue(tree, probs, exit_node, bonus) > ALPHA


def test_sharded_tev_never_emits_a_child_token_as_bonus():
    tree = DraftTree(parent=[-1, 0, 0], token=[0, 0, 1])
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [1 / 3] * 3])
    exit_node, bonus = tev_samples(tree, probs, jax.random.key(1), 5000)
    assert np.all(bonus[exit_node == 0] == 2)


def test_a_wrong_law_is_rejected_by_the_same_check():
    tree, probs = _case(seed=1)
    exit_node, bonus = tev_samples(tree, probs, jax.random.key(0), 40_000)
    other = probs.copy()
    other[0] = np.roll(other[0], 1)  # a different root row: the samples no longer follow its law
    exit_node2, bonus2 = tev_samples(tree, other, jax.random.key(0), 40_000)
    try:
        p = _chi_square_pvalue(tree, probs, exit_node2, bonus2)
    except AssertionError:
        p = 0.0
    assert p < ALPHA


SCRIPT = r"""
import json, sys, jax, numpy as np
from exitlaw.simulate.lab.sharded import tev_samples
from exitlaw.theory.demo import random_rows, random_tree
rng = np.random.default_rng(0)
tree = random_tree(rng, 10, 5)
probs = random_rows(rng, tree.num_nodes, 5)
e, b = tev_samples(tree, probs, jax.random.key(3), 1001)
print(json.dumps({"devices": len(jax.devices()), "exit": e.tolist(), "bonus": b.tolist()}))
"""


def _run(devices: int) -> dict:
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        "JAX_PLATFORMS": "cpu",
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_samples_do_not_depend_on_the_number_of_devices():
    one, two = _run(1), _run(2)
    assert one["devices"] == 1 and two["devices"] == 2
    assert one["exit"] == two["exit"] and one["bonus"] == two["bonus"]
