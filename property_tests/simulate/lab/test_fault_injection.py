"""Fault injection: ``exitlaw simulate run`` interrupted by SIGINT or SIGKILL at a random point, then
rerun. The folder is never mixed: it holds the old complete run or nothing under the output names
(results.json marks a complete folder), and the rerun's outputs equal an uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from helpers.cli_argv import train_argv, write_prompts

ARGS = [
    "simulate",
    "run",
    "--preset",
    "small",
    "--builders",
    "ddtree,chain",
    "--rounds",
    "120",
    "--no-progress",
]


def _run(out, *extra, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "exitlaw", *ARGS, "--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _interrupted(out, sig, delay, *extra):
    proc = subprocess.Popen(
        [sys.executable, "-m", "exitlaw", *ARGS, "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.wait(timeout=120)
    return proc.returncode


def _outputs(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*")) if p.is_file()}


def _comparable(files: dict[str, bytes]) -> dict:
    """Outputs with the wall-clock fields (seconds per builder) removed and trace paths cut to their names."""
    res = {}
    for name, data in files.items():
        if name == "results.json":
            d = json.loads(data)
            for b in d["builders"].values():
                b.pop("seconds")
                b["trace"] = os.path.basename(b["trace"])
            res[name] = d
        else:
            res[name] = data
    return res


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    proc = _run(out)
    assert proc.returncode == 0, proc.stderr
    return _comparable(_outputs(out))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_simulate_interrupted_then_rerun_equals_an_uninterrupted_run(tmp_path, reference, sig):
    out = tmp_path / "run"
    delay = float(np.random.default_rng(int(sig)).uniform(1.0, 6.0))
    code = _interrupted(out, sig, delay)
    files = _outputs(out) if out.exists() else {}
    if code != 0:
        # interrupted: nothing under the output names (the staging folder is hidden), or, when the signal
        # landed after the commit but before the process exited, the complete run; never a part of it
        assert files == {} or _comparable(files) == reference, sorted(files)
    proc = _run(out)
    if code == 0 or files:  # it finished (or committed) before the signal: the rerun must refuse
        assert proc.returncode == 2 and "already exist" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
    assert _comparable(_outputs(out)) == reference
    assert not (out / ".simulate-partial").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_simulate_overwrite_interrupted_keeps_the_old_run_intact(tmp_path, reference, sig):
    out = tmp_path / "run"
    assert _run(out).returncode == 0
    old = _outputs(out)
    delay = float(np.random.default_rng(10 + int(sig)).uniform(1.0, 6.0))
    code = _interrupted(out, sig, delay, "--overwrite", "--seed", "7")
    left = _outputs(out)
    assert _run(out, "--overwrite", "--seed", "7").returncode == 0
    new = _comparable(_outputs(out))
    assert set(new) == set(reference) and new != reference  # a complete folder of the new seed
    if code != 0:
        # killed before the commit: the old complete run byte for byte; after it (the kill landed while the
        # staging folder was being dropped): the new complete run; inside the renames: no results.json, so
        # the folder reads as incomplete. Never a results.json beside another run's traces.
        assert left == old or _comparable(left) == new or "results.json" not in left, sorted(left)
    assert json.loads(_outputs(out)["results.json"])["config"]["seed"] == 7
    assert os.listdir(out) and not (out / ".simulate-partial").exists()


# ----- train: SIGKILL / SIGINT mid-run, then --resume -------------------------------------------
def _train_argv(tdir, ddir, prompts, out, cache, *extra):
    """An eight-step checkpointed run in a fresh interpreter (``python -m exitlaw train ...``)."""
    run = dict(steps=8, batch_size=1, anchors=2, budget=6, max_new_tokens=10, gen_batch=2)
    flags = dict(out=out, checkpoint_every=1, cache_dir=cache, no_progress=True)
    return [sys.executable, "-m", "exitlaw"] + train_argv(
        tdir, ddir, prompts, *extra, **run, **flags
    )


_ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def train_reference(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    prompts = write_prompts(root / "p.jsonl")
    proc = subprocess.run(
        _train_argv(*tiny, prompts, root / "ref", root / "cache"),
        capture_output=True,
        text=True,
        timeout=900,
        env=_ONE_THREAD,
    )
    assert proc.returncode == 0, proc.stderr
    return root, prompts, _weights(root / "ref" / "final")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_train_interrupted_then_resumed_equals_an_uninterrupted_run(tiny, train_reference, sig):
    import torch

    root, prompts, reference = train_reference
    out = root / f"run_{int(sig)}"
    argv = _train_argv(*tiny, prompts, out, root / "cache")
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_ONE_THREAD
    )
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:  # kill after the second checkpoint lands
        if (out / "checkpoints" / "step_000002").is_dir():
            proc.send_signal(sig)
            break
        time.sleep(0.05)
    proc.wait(timeout=120)
    interrupted = proc.returncode != 0
    if interrupted:
        assert not (out / "final").exists()  # an interrupted run has no final drafter
    resumed = subprocess.run(
        argv + ["--resume"], capture_output=True, text=True, timeout=900, env=_ONE_THREAD
    )
    assert resumed.returncode == 0, resumed.stderr
    got = _weights(out / "final")
    assert set(got) == set(reference) and all(torch.equal(got[k], reference[k]) for k in got)
    assert (out / "final" / ".complete").is_file()
    # a save cut by SIGKILL can leave only a hidden ".step_N.partial-PID" folder, never a step_N that looks whole
    assert all(
        p.name.startswith(".") or (p / ".complete").is_file()
        for p in (out / "checkpoints").iterdir()
    )


# ----- figures: SIGINT / SIGKILL mid-run, then rerun ---------------------------------------------
FIGS = [
    "verifier_equivalence",
    "sampled_exactness",
    "caddtree_throughput",
]  # deterministic to the byte


def _figures_argv(out, *extra):
    return [
        sys.executable,
        "-m",
        "exitlaw",
        "figures",
        "--quick",
        "--only",
        ",".join(FIGS),
        "--out",
        str(out),
        *extra,
    ]


def _figure_triples(out) -> dict[str, tuple[bytes | None, ...]]:
    """Per figure: (png, pdf, json) bytes, None where a file is absent."""
    return {
        n: tuple(
            (out / f"{n}.{ext}").read_bytes() if (out / f"{n}.{ext}").is_file() else None
            for ext in ("png", "pdf", "json")
        )
        for n in FIGS
    }


@pytest.fixture(scope="module")
def figure_references(tmp_path_factory):
    refs = {}
    for seed in (0, 1):
        out = tmp_path_factory.mktemp(f"figs{seed}")
        proc = subprocess.run(
            _figures_argv(out, "--seed", str(seed)), capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr
        refs[seed] = _figure_triples(out)
        assert all(None not in t for t in refs[seed].values())
    assert refs[0] != refs[1]
    return refs


def _kill_at(argv, sig, delay):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.wait(timeout=120)
    return proc.returncode


def _assert_no_mixed_figure(out, *allowed):
    """Every figure whose data JSON is there (complete) is one reference's triple byte for byte; images
    without their JSON are an interrupted write (visibly incomplete)."""
    for name, triple in _figure_triples(out).items():
        if triple[2] is not None:
            assert any(triple == ref[name] for ref in allowed), name


@pytest.mark.slow
@pytest.mark.parametrize("sig,case", [(signal.SIGINT, 0), (signal.SIGKILL, 0), (signal.SIGKILL, 1)])
def test_figures_interrupted_then_rerun_equals_an_uninterrupted_run(
    tmp_path, figure_references, sig, case
):
    ref = figure_references[0]
    out = tmp_path / "figs"
    delay = float(np.random.default_rng([int(sig), case]).uniform(1.0, 9.0))
    _kill_at(_figures_argv(out), sig, delay)
    if out.exists():
        _assert_no_mixed_figure(out, ref)
    proc = subprocess.run(_figures_argv(out), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:  # a figure finished before the signal: refused up front, naming it
        assert (
            proc.returncode == 2 and "already exist" in proc.stderr and "--overwrite" in proc.stderr
        )
        _assert_no_mixed_figure(out, ref)
        proc = subprocess.run(
            _figures_argv(out, "--overwrite"), capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr
    assert _figure_triples(out) == ref
    assert not (out / ".figures-partial").exists()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_figures_overwrite_interrupted_never_pairs_new_data_with_old_images(
    tmp_path, figure_references, sig
):
    out = tmp_path / "figs"
    assert subprocess.run(_figures_argv(out), capture_output=True, timeout=600).returncode == 0
    delay = float(np.random.default_rng(20 + int(sig)).uniform(1.0, 9.0))
    _kill_at(_figures_argv(out, "--overwrite", "--seed", "1"), sig, delay)
    _assert_no_mixed_figure(out, figure_references[0], figure_references[1])
    proc = subprocess.run(
        _figures_argv(out, "--overwrite", "--seed", "1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert _figure_triples(out) == figure_references[1]
    assert not (out / ".figures-partial").exists()
