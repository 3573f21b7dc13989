"""TEV Monte-Carlo rounds in JAX with the sample axis sharded over devices.

For large sweeps on one fixed tree: ``S`` independent TEV rounds (exit ``V ~ w``,
then bonus ``~ p_V^res``; docs/design.md §1.6, "TEV"), one PRNG key per round. Keys come
from ``jax.random.split(key, S)`` and every round uses only its own key, so the
samples are identical whatever the number of devices (tested). Sharding uses a
1-D :class:`jax.sharding.Mesh` over ``devices`` (default: all of them); on a CPU,
``XLA_FLAGS=--xla_force_host_platform_device_count=K`` gives ``K`` devices.
"""

from __future__ import annotations

from functools import partial
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from exitlaw.theory import DraftTree, check_tree_rows, exit_law, residual_rows

_AXIS = "samples"


def _log(x: jax.Array) -> jax.Array:
    return jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)), -jnp.inf)


@partial(jax.jit, static_argnames=("sharding",))
def _draw(
    keys: jax.Array, log_w: jax.Array, log_res: jax.Array, sharding
) -> tuple[jax.Array, jax.Array]:
    def one(key):
        k_exit, k_bonus = jax.random.split(key)  # exit and bonus draws never share a stream
        v = jax.random.categorical(k_exit, log_w)
        return v, jax.random.categorical(k_bonus, log_res[v])

    keys = jax.lax.with_sharding_constraint(keys, sharding)
    return jax.vmap(one)(keys)


def tev_samples(
    tree: DraftTree,
    probs,
    key: jax.Array,
    num_samples: int,
    *,
    devices: Sequence[jax.Device] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``num_samples`` TEV rounds on ``tree``: ``(exit [S], bonus [S])`` as int64 numpy arrays."""
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    check_tree_rows(tree, probs)
    devices = list(devices) if devices is not None else jax.devices()
    if not devices:
        raise ValueError("no JAX devices to shard over")
    law = exit_law(tree, probs)
    log_w = _log(jnp.asarray(law.w))
    log_res = _log(residual_rows(tree, probs))
    mesh = Mesh(np.array(devices), (_AXIS,))
    sharding = NamedSharding(mesh, PartitionSpec(_AXIS))
    padded = -(-num_samples // len(devices)) * len(devices)  # the sample axis splits evenly
    keys = jax.random.split(key, num_samples)
    if padded > num_samples:
        keys = jnp.concatenate(
            [keys, jax.random.split(jax.random.fold_in(key, 1), padded - num_samples)]
        )
    keys = jax.device_put(keys, sharding)
    exit_node, bonus = _draw(keys, log_w, log_res, sharding)
    return (
        np.asarray(exit_node[:num_samples], dtype=np.int64),
        np.asarray(bonus[:num_samples], dtype=np.int64),
    )
