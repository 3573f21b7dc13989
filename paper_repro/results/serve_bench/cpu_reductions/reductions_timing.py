"""Times the three CPU reductions of the decode round against the forms they replaced, one torch thread,
on the batched round's shapes (8 rows, budget 32, vocabulary 512: the mini pair). Prints median us per
call over 5 blocks of 300 calls; writes nothing. Run: python reductions_timing.py > reductions_timing.txt"""

from __future__ import annotations

import statistics
import time

import torch

from exitlaw.engine.builders.single import device_top_candidates, top_candidates
from exitlaw.engine.decode.reductions import first_argmax
from exitlaw.engine.models.dflash import attend_grouped, attend_repeated


def median_us(fn, calls: int = 300, blocks: int = 5) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, 33, 512, generator=g)  # the greedy verifier's tree rows
    draft = torch.randn(8, 15, 512, generator=g).mul(3).log_softmax(-1)  # the builder's draft rows
    q = torch.randn(8, 3, 16, 32, generator=g)  # the drafter's block queries, 3 heads
    k, v = (torch.randn(8, 1, 316, 32, generator=g) for _ in range(2))  # 1 K/V head, 300 + 16 keys
    mask = torch.zeros(8, 1, 16, 316)
    mask[:4, ..., 260:300] = float("-inf")  # stale columns of shorter rows
    rows = [
        ("argmax [8, 33, 512]", lambda: logits.argmax(-1), lambda: first_argmax(logits)),
        (
            "candidate table k+1 = 33 of [8, 15, 512]",
            lambda: device_top_candidates(draft, 33),
            lambda: top_candidates(draft, 33),
        ),
        (
            "drafter masked attention [8, 3, 16] x 316 keys",
            lambda: attend_repeated(q, k, v, mask, 32**-0.5),
            lambda: attend_grouped(q, k, v, mask, 32**-0.5),
        ),
    ]
    print(f"torch {torch.__version__}, 1 thread; median us per call (5 blocks of 300)")
    print(f"{'reduction':<48} {'before':>9} {'after':>9} {'ratio':>6}")
    for name, before, after in rows:
        b, a = median_us(before), median_us(after)
        print(f"{name:<48} {b:9.1f} {a:9.1f} {b / a:6.2f}")
    assert torch.equal(first_argmax(logits), logits.argmax(-1))
    assert torch.equal(attend_grouped(q, k, v, mask, 0.2), attend_repeated(q, k, v, mask, 0.2))


if __name__ == "__main__":
    main()
