"""Stage times of one continuous-batching round on the tiny pair, engine alone (no server), at 1 and 8 rows.

Usage: python round_stages.py PAIR [THREADS]   (PAIR from ``exitlaw tiny-models --out PAIR --seed 0``)

Rows of random prompts (40..89 tokens, seeded) are admitted to a :class:`RunningBatch` (DDTree budget 32 +
TEV, T = 0), decoded 10 rounds, then 150 rounds are timed through the batched round with its stage timer.
Prints ms per round in total and per stage (draft, build, verify_forward, decide, commit).
"""

import random
import sys
import time

import torch

from exitlaw.engine.decode.batch_generate import batch_round
from exitlaw.engine.decode.continuous import (
    Row,
    RunningBatch,
    _decide_batch,
    _RowStreams,
    row_config,
)
from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.engine.decode.timing import StageTimer
from exitlaw.engine.models.checkpoint import load_pair


def main(pair: str, threads: int = 1, rounds: int = 150) -> None:
    torch.set_num_threads(threads)
    target, drafter = load_pair(f"{pair}/target", f"{pair}/draft", device="cpu")
    rng = random.Random(0)
    prompts = [[rng.randrange(300) for _ in range(40 + 7 * i)] for i in range(8)]
    cfg = DecodeConfig(method="ddtree", verifier="tev", budget=32, max_new_tokens=10**6)
    for rows in (1, 8):
        batch = RunningBatch(target, drafter, cfg)
        batch.admit(
            [Row(i, prompts[i], row_config(cfg, seed=i, max_new_tokens=5000)) for i in range(rows)]
        )
        for _ in range(10):
            batch.step()
        timer = StageTimer(target.device)
        with torch.inference_mode():
            t0 = time.perf_counter()
            for _ in range(rounds):
                batch_round(
                    batch.state,
                    target,
                    drafter,
                    cfg,
                    _RowStreams(batch.rows),
                    timer=timer,
                    decide=_decide_batch,
                    append=False,
                )
            total = (time.perf_counter() - t0) / rounds * 1e3
        stages = timer.summary()
        print(
            f"{rows} row(s), {threads} thread(s): round {total:.2f} ms; "
            + ", ".join(f"{k} {v['total_s'] / rounds * 1e3:.3f}" for k, v in stages.items())
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
