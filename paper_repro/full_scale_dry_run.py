"""The full-scale reproduction, dry-run on a CPU: every command of every config, executed end to end.

``dry_run(workdir, run_command=exitlaw.cli.main)`` takes the commands
:func:`.full_scale.commands` generates for each config (``exitlaw train``, ``exitlaw
bench decoding``, ``exitlaw gpu-check``) and runs each one through exitlaw's own command line, in
this process. What differs from a GPU run is
only what a CPU and no network force, each substitution made on the command line:

* ``--target HUB_ID``: a random-weight model of the same architecture family
  (:data:`TARGET_FAMILIES`; Qwen3, Llama, Qwen3-MoE, Gemma-4 with its sliding-window layers) at
  the tiny sizes of :class:`exitlaw.engine.models.tiny.TinySpec`, saved with ``save_pretrained`` together with a real
  tokenizer carrying that family's chat template; ``--draft RELEASED`` a tiny DFlash
  drafter for it (trained drafters are the ones the dry run's training commands write);
* datasets: local files in the Hub rows' shapes (:mod:`.dry_run_stand_ins`);
* ``--device cuda`` -> ``cpu``, ``--dtype bfloat16`` -> ``float32``, ``torchrun`` -> one process;
* sizes (:class:`Shrink`): prompts per set, new tokens, training steps, batch, anchors,
  training prompts; ``gpu-check --tiny`` with a short context and one repetition.

Budgets, temperatures, verifiers, objectives, lambda, learning rate, seeds and repeats
are the configs' own. After each command the dry run checks its output: a trained
drafter exists and the prompts it was trained on are the chat-template rendering of
the records' first user turns (decoded back to text and compared with the template
rendered as text); every bench run stored its outputs, used the chat template and, at
T = 0, reproduced autoregressive decoding; gpu-check wrote its rows. Any failure raises
:class:`DryRunError` naming the config and the command. Identical commands in two
configs run once; two configs writing one training run with different settings fail.
"""

from __future__ import annotations

import io
import json
import shlex
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from exitlaw.paper_repro.dry_run_stand_ins import (
    DryRunError,
    Shrink,
    StandIns,
    command_of,
    flag_values,
)
from exitlaw.paper_repro.full_scale import commands, config_paths, load_config

RESULTS = "results.json"  # what `--out DIR` of bench decoding and gpu-check holds

TARGET_FAMILIES = {  # Hub id of each config's target -> the transformers family of its stand-in
    "Qwen/Qwen3-4B": "qwen3",
    "Qwen/Qwen3-8B": "qwen3",
    "meta-llama/Llama-3.1-8B-Instruct": "llama",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3_moe",
    "google/gemma-4-12b-it": "gemma4",
}


@dataclass
class DryRunReport:
    """Per command: config, family, command, status, seconds (and the executed command line);
    ``limitations``: configs that ran only on a fallback stand-in, and why."""

    workdir: str
    records: list[dict] = field(default_factory=list)
    limitations: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def _execute(run_command: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str]:
    """``exitlaw ARGV`` in this process; (exit status, captured stdout + stderr)."""
    buf = io.StringIO()
    with redirect_stdout(buf), redirect_stderr(buf):
        rc = run_command(argv[1:])
    return rc, buf.getvalue()


def _rendered_prompt_ids(tokenizer, turn: str) -> list[int]:
    """The chat template rendered as TEXT, then tokenised: an encoding path independent of the encoder's."""
    kw = {"enable_thinking": False} if "enable_thinking" in (tokenizer.chat_template or "") else {}
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": turn}], tokenize=False, add_generation_prompt=True, **kw
    )
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _check_train(argv: list[str]) -> str:
    from transformers import AutoTokenizer  # lazy: the face (ledger path) imports us

    from exitlaw.engine.training.data import load_prompts  # lazy: torch, as above

    v = flag_values(argv)
    out = Path(v["--out"])
    if not (out / "final" / "model.safetensors").is_file():
        raise DryRunError(f"no trained drafter in {out / 'final'}")
    tok = AutoTokenizer.from_pretrained(v["--target"])
    want = [
        _rendered_prompt_ids(tok, p)
        for p in load_prompts(v["--prompts"], limit=int(v["--num-prompts"]))
    ]
    for cache in sorted((out.parent / ".exitlaw-cache").glob("continuations-*.jsonl")):
        got = [
            json.loads(x)["prompt_ids"] for x in cache.read_text(encoding="utf-8").splitlines()[1:]
        ]
        if got == want:
            return f"trained {v['--steps']} steps; {len(want)} training prompts are the chat-template rendering"
    raise DryRunError(
        "the training prompts in the continuation cache are not the chat-template rendering of the "
        f"records' first user turns (first expected: {tok.decode(want[0])!r})"
    )


def _check_bench(argv: list[str]) -> str:
    res = json.loads((Path(flag_values(argv)["--out"]) / RESULTS).read_text(encoding="utf-8"))
    if not res["config"].get("chat_template"):
        raise DryRunError("bench did not encode the prompts with the chat template")
    turns = sum(len(p.get("turns", [0])) for p in res["prompts"])
    for run in res["runs"]:
        if len(run["outputs"]) != turns or any(not o["tokens"] for o in run["outputs"]):
            raise DryRunError(
                f"run {run['method']}/{run['verifier']} stored {len(run['outputs'])} outputs "
                f"for {turns} turns"
            )
        if run.get("matches_ar") is False:
            raise DryRunError(
                f"at T = 0 {run['method']}/{run['verifier']}/B={run['budget']} differs from "
                "autoregressive decoding"
            )
    return f"{len(res['runs'])} runs, {turns} turns each, T = 0 equal to AR"


def _check_gpu_check(argv: list[str]) -> str:
    rows = json.loads((Path(flag_values(argv)["--out"]) / RESULTS).read_text(encoding="utf-8"))[
        "rows"
    ]
    if not rows:
        raise DryRunError("gpu-check wrote no rows")
    return f"{len(rows)} latency rows"


_CHECKS = {"train": _check_train, "bench decoding": _check_bench, "gpu-check": _check_gpu_check}


@dataclass(frozen=True)
class Limitation:
    """A family exitlaw's engine cannot run yet: the errors that show it, and the stand-in used instead."""

    match: tuple[str, ...]
    fallback: str
    note: str


KNOWN_LIMITATIONS: dict[
    str, Limitation
] = {}  # none at present (Gemma-4's sliding-window layers now run)


class _Limited(Exception):
    def __init__(self, family: str, message: str):
        super().__init__(message)
        self.family = family


def _run_config(
    cfg: dict,
    name: str,
    family: str,
    runs: Path,
    stand: StandIns,
    shrink: Shrink,
    seen: dict,
    train_outs: dict,
    report: DryRunReport,
    progress,
    run_command,
) -> None:
    limit = KNOWN_LIMITATIONS.get(family)
    for argv in commands(cfg, str(runs)):
        rec = {"config": name, "family": family, "command": shlex.join(argv)}
        seed = flag_values(argv).get("--seed", "0")
        if tuple(argv) in seen:
            rec.update(status="same command as in " + seen[tuple(argv)], seconds=0.0)
        elif command_of(argv) == "bench decoding" and seed != "0" and not shrink.all_repeats:
            rec.update(
                status=f"repeat with seed {seed} of the seed-0 command (not run; all_repeats runs it)",
                seconds=0.0,
            )
        else:
            if argv[1] == "train":
                out = flag_values(argv)["--out"]
                if out in train_outs:
                    raise DryRunError(
                        f"{name} and {train_outs[out]} both write the training run {out} "
                        "with different settings"
                    )
                train_outs[out] = name
            seen[tuple(argv)] = name
            run = stand.rewrite(argv, cfg, family)
            t1 = time.perf_counter()
            try:
                rc, log = _execute(run_command, run)
            except Exception as err:  # any crash of a real command is a finding: name the command
                if limit and any(m in str(err) for m in limit.match):
                    raise _Limited(family, f"{type(err).__name__}: {err}") from err
                raise DryRunError(
                    f"{name}: `{shlex.join(run)}` crashed: {type(err).__name__}: {err}"
                ) from err
            if rc != 0:
                if limit and any(m in log for m in limit.match):
                    raise _Limited(family, log.strip().splitlines()[-1])
                raise DryRunError(f"{name}: `{shlex.join(run)}` exited {rc}:\n{log[-2000:]}")
            try:
                rec["status"] = "ok: " + _CHECKS[command_of(run)](run)
            except DryRunError as err:
                raise DryRunError(f"{name}: `{shlex.join(run)}`: {err}") from None
            rec.update(executed=shlex.join(run), seconds=time.perf_counter() - t1)
        report.records.append(rec)
        if progress is not None:
            progress(rec)
    if limit is not None:
        raise DryRunError(
            f"{name}: the known limitation of {family} ({limit.match}) did not occur; "
            "remove it from KNOWN_LIMITATIONS"
        )


def dry_run(
    workdir: str | Path,
    paths=None,
    *,
    run_command: Callable[[list[str]], int],
    shrink: Shrink = Shrink(),
    progress=None,
) -> DryRunReport:
    """Execute every command of every config in ``paths`` (default: all shipped) under ``workdir``.

    ``run_command(argv)`` is exitlaw's command line (``exitlaw.cli.main``, passed in because
    the command line sits above this library), called with each command's arguments after
    ``exitlaw``. ``progress(record)`` is called after each command. Raises :class:`DryRunError` on the
    first command that fails or whose output is wrong. A config whose family is a known
    limitation (:data:`KNOWN_LIMITATIONS`) must fail the known way; it is then rerun on the
    fallback stand-in and listed in ``report.limitations``.
    """
    workdir = Path(workdir).resolve()
    if workdir.exists() and any(workdir.iterdir()):
        raise FileExistsError(f"dry-run directory {workdir} is not empty")
    workdir.mkdir(parents=True, exist_ok=True)
    stand = StandIns(workdir, shrink)
    report, t0 = DryRunReport(str(workdir)), time.perf_counter()
    seen: dict[tuple, str] = {}
    train_outs: dict[str, str] = {}
    for path in paths or config_paths():
        cfg, name = load_config(path), Path(path).name
        if cfg["target"] not in TARGET_FAMILIES:
            raise DryRunError(
                f"{name}: no stand-in family for target {cfg['target']!r}; add it to TARGET_FAMILIES"
            )
        family = TARGET_FAMILIES[cfg["target"]]
        shared = (stand, shrink, seen, train_outs, report, progress, run_command)
        try:
            _run_config(cfg, name, family, workdir / "runs", *shared)
        except _Limited as lim:
            known = KNOWN_LIMITATIONS[lim.family]
            report.limitations.append(
                {
                    "config": name,
                    "family": lim.family,
                    "error": str(lim),
                    "note": known.note,
                    "fallback": known.fallback,
                }
            )
            _run_config(cfg, name, known.fallback, workdir / f"runs-{known.fallback}", *shared)
    report.seconds = time.perf_counter() - t0
    return report


def format_dry_run(report: DryRunReport) -> str:
    ran = [r for r in report.records if "executed" in r]
    lines = [
        f"full-scale dry run in {report.workdir}: {len(ran)} commands executed, "
        f"{len(report.records) - len(ran)} not run (the same command in another config, or a repeat "
        f"differing only in its seed), {report.seconds:.1f} s"
    ]
    for r in report.records:
        lines.append(
            f"{r['config']:<32} {r['family']:<11} {r['seconds']:>6.2f} s  "
            f"{r['command'].split(' --')[0]:<16} {r['status']}"
        )
    for lim in report.limitations:
        lines += [
            f"KNOWN LIMITATION: {lim['config']} cannot run on its own family ({lim['family']}): {lim['error']}",
            f"  {lim['note']}",
        ]
    return "\n".join(lines)


__all__ = [
    "TARGET_FAMILIES",
    "KNOWN_LIMITATIONS",
    "Limitation",
    "DryRunError",
    "Shrink",
    "DryRunReport",
    "dry_run",
    "format_dry_run",
]
