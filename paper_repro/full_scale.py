"""Full-scale (GPU, Hugging Face Hub) commands for the paper's Tables 1-5, generated from ``configs/*.json``.

``exitlaw repro full [CONFIG ...] [--runs DIR]`` prints the shell commands,
using only the flags ``exitlaw train``, ``exitlaw bench decoding`` and
``exitlaw gpu-check`` define. Repeats are separate bench runs
with seeds ``0..repeats-1``; trained drafters land in ``RUNS/MODEL/train_OBJ/final``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
SCHEMA = "exitlaw.full_scale/1"


def load_config(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"full-scale config {str(path)!r} does not exist")
    cfg = json.loads(path.read_text(encoding="utf-8"))
    if cfg.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema must be {SCHEMA!r}, got {cfg.get('schema')!r}")
    for key in ("table", "model", "target", "released_draft", "budgets", "temperatures"):
        if key not in cfg:
            raise ValueError(f"{path}: missing field {key!r}")
    return cfg


def config_paths() -> list[Path]:
    return sorted(CONFIG_DIR.glob("*.json"))


def _csv(xs) -> str:
    return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in xs)


def _options(values: dict, *keys: str) -> list[str]:
    """``--key value`` for each of ``keys`` (``_`` written ``-``), the value as ``str`` writes it."""
    return [x for k in keys for x in (f"--{k.replace('_', '-')}", str(values[k]))]


def train_commands(cfg: dict, runs: str) -> list[list[str]]:
    tr = cfg["train"]
    out = []
    for obj in tr["objectives"]:
        argv = [
            "exitlaw",
            "train",
            "--target",
            cfg["target"],
            "--draft",
            cfg["released_draft"],
            "--prompts",
            tr["prompts"],
            "--out",
            f"{runs}/{cfg['model']}/train_{obj}",
            "--objective",
            obj,
            "--lam",
            str(0.0 if obj == "token" else tr["lam"]),
            *_options(
                tr,
                "budget",
                "steps",
                "batch_size",
                "anchors",
                "lr",
                "max_new_tokens",
                "gen_temperature",
                "dtype",
            ),
            "--chat",
        ]
        out.append(argv)
    return out


def drafter_path(cfg: dict, drafter: str, runs: str) -> str:
    return (
        cfg["released_draft"]
        if drafter == "released"
        else f"{runs}/{cfg['model']}/train_{drafter}/final"
    )


def bench_commands(cfg: dict, runs: str) -> list[list[str]]:
    ev = cfg["eval"]
    out = []
    for drafter in cfg["drafters"]:
        for ds in ev["datasets"]:
            for seed in range(ds["repeats"]):
                tag = f"{runs}/{cfg['model']}/table{cfg['table']}/{drafter}_{ds['name']}_seed{seed}"
                out.append(
                    [
                        "exitlaw",
                        "bench",
                        "decoding",
                        "--target",
                        cfg["target"],
                        "--draft",
                        drafter_path(cfg, drafter, runs),
                        "--prompts",
                        ds["name"],
                        *_options(ds, "num_prompts"),
                        "--budget",
                        _csv(cfg["budgets"]),
                        "--temperature",
                        _csv(cfg["temperatures"]),
                        "--verifier",
                        ",".join(cfg["verifiers"]),
                        *_options(ev, "max_new_tokens"),
                        "--seed",
                        str(seed),
                        *_options(ev, "device", "dtype", "warmup"),
                        "--out",
                        tag,
                    ]
                )
    return out


def latency_commands(cfg: dict, runs: str) -> list[list[str]]:
    return [
        [
            "exitlaw",
            "gpu-check",
            "--device",
            "cuda",
            "--budget",
            _csv(cfg["budgets"]),
            *_options(cfg, "context"),
            "--repeats",
            str(cfg["reps"]),
            "--temperature",
            f"{t:g}",
            "--out",
            f"{runs}/{cfg['model']}/table3/latency_T{t:g}",
        ]
        for t in cfg["temperatures"]
    ]


def commands(cfg: dict, runs: str = "runs/full") -> list[list[str]]:
    """Every command for one config: training (objectives it needs), then evaluation."""
    if cfg["table"] == "3":
        return latency_commands(cfg, runs)
    needs_training = [d for d in cfg["drafters"] if d != "released"]
    train = [
        c for c in train_commands(cfg, runs) if c[c.index("--objective") + 1] in needs_training
    ]
    return train + bench_commands(cfg, runs)


def render_all(paths=None, runs: str = "runs/full") -> str:
    """The commands of every config in ``paths`` (default: all shipped configs), one block each."""
    return "\n\n".join(render(load_config(p), runs) for p in (paths or config_paths())) + "\n"


def render(cfg: dict, runs: str = "runs/full") -> str:
    lines = [f"# {cfg['description']}"]
    for argv in commands(cfg, runs):
        prefix = ""
        if argv[:2] == ["exitlaw", "train"] and cfg["train"].get("nproc_per_node", 1) > 1:
            prefix = f"torchrun --nproc_per_node {cfg['train']['nproc_per_node']} -m "  # runs `python -m exitlaw`
        lines.append(prefix + shlex.join(argv))
    return "\n".join(lines)
