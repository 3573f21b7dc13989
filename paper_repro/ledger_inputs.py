"""Gathering the claims ledger's inputs, their provenance, and the ledger built from SHIPPED inputs.

Shipped inputs (``paper_repro/results/``, all produced on a CPU but the last; :data:`SHIPPED`):

* ``ledger_inputs/{verifier_equivalence,budget_sweep,sampled_exactness,verifier_latency}.json``:
  figure data (``exitlaw figures``), stamped with the producing exitlaw version,
  git commit and machine (:func:`make_shipped_inputs` regenerates them);
* ``ledger_inputs/checks/{predraw,residual,tev}.json``: conformance-kit reports;
* ``mini_full_seed0.json``: the shallow ``exitlaw repro mini`` run;
* ``paper_regime/results.json``: the paper-regime run (``exitlaw repro mini --preset paper-regime``,
  design ``paper_repro/PAPER_REGIME.md``): its paired-effect records and its precondition; it decides
  the engine ExitTrain rows, read when present, with ``paper_regime/ft_data/fresh_prompts.json``
  (``paper_regime_data``: the temperature of its fine-tuning data, part of the rows' regime);
* ``authors_regime/results.json`` and ``authors_regime/ft_data/fresh_prompts.json``: the authors'-recipe
  run (``--preset authors-regime``, design ``paper_repro/AUTHORS_REGIME.md``): its four co-primary
  comparisons and its precondition, read when present;
* ``mini_deep_seed0.json``, ``mini_deep_budgets_seed0.json`` and ``sim_exittrain_sweep/*.json``:
  paired-effect files (the deep mini preset, its re-run evaluated at B = 32/64/128: history, outside the
  paper's regime; and the simulation sweep), read when present;
* ``sim_exittrain_matched/sweep.json``: the simulation sweep trained and judged at T = 0.5 (its matched
  cells, rule 5 of ``simulate/exittrain/sweep.py``), read when present;
* ``paper_regime/acceptance.json``: the paper-regime run's comparisons in per-step acceptance ``a``,
  recomputed from its cells (``exitlaw repro units --overwrite``): the ExitTrain unit
  policy's primary unit (issue 49); ``sim_exittrain_authors/results.json``: the authors' recipe simulated
  (``exitlaw repro sim-authors``), read when present;
* ``gpu/verifiers_T1/results.json``: the verifier-stage bench of the first GPU run (one H200, bf16;
  ``paper_repro/results/gpu/README.md``), read when present.

**Paired-effect files** (``mini_deep_seed0.json``, ``sim_exittrain_sweep/*.json``): the
record shape, and the two native formats read as such, are in
:mod:`exitlaw.paper_repro.paired_effects`; files of the sweep directory that hold
no paired effects (its ``config.json``) are skipped.

Provenance of every input file: its path (relative to the repository root when
inside it), sha256, the ``config`` it records (figure data: its top-level scalar
parameters) and that config's sha256, and
the exitlaw version and git commit it records (``versions.exitlaw`` /
``provenance.exitlaw_version``, ``provenance.git_commit``), else ``"unknown"``.
The shipped ledger holds no timestamps and no absolute paths, so
:func:`ledger_from_shipped` regenerates it byte for byte.

Every record also says its ``origin`` (docs/design.md §1.11): ``shipped`` (a file under
``paper_repro/results``) or ``this run`` (a file a run made). Where a file of this run records no
exitlaw version or commit (a mini run's ``results.json`` records no commit), the ledger fills them
from the checkout it runs in and says so (``filled``); a commit ending in ``-dirty`` is flagged in the
ledger.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

from exitlaw import __version__
from exitlaw.paper_repro.ledger import build_ledger, write_ledger
from exitlaw.paper_repro.paired_effects import readable
from exitlaw.simulate.verifiers.table import implemented
from exitlaw.theory.infra.atomic_io import atomic_write_text
from exitlaw.theory.infra.provenance import git_commit as _git_commit
from exitlaw.theory.registry import FIXED_TREE, PROCEDURE

FIGURE_INPUTS = ("verifier_equivalence", "budget_sweep", "sampled_exactness", "verifier_latency")
NEEDED = FIGURE_INPUTS  # figure data a ledger over a run directory computes when missing
RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parent.parent
SHIPPED = {
    **{name: f"ledger_inputs/{name}.json" for name in FIGURE_INPUTS},
    "checks": "ledger_inputs/checks",
    "mini": "mini_full_seed0.json",
    "mini_deep": "mini_deep_seed0.json",
    "mini_deep_budgets": "mini_deep_budgets_seed0.json",
    "paper_regime": "paper_regime/results.json",
    "paper_regime_data": "paper_regime/ft_data/fresh_prompts.json",
    "authors_regime": "authors_regime/results.json",
    "authors_regime_data": "authors_regime/ft_data/fresh_prompts.json",
    "sim_exittrain_sweep": "sim_exittrain_sweep",
    "sim_exittrain_matched": "sim_exittrain_matched/sweep.json",
    # the ExitTrain unit policy (issue 49): the paper-regime run in a, from its cells
    "paper_regime_units": "paper_regime/acceptance.json",
    "sim_exittrain_authors": "sim_exittrain_authors/results.json",
    "field_lab": "field_lab.json",
    "verifier_latency_gpu": "gpu/verifiers_T1/results.json",
}
KIT_VERIFIERS = implemented(PROCEDURE, kind=FIXED_TREE, sampling=True)


# ----- provenance ------------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rel(path: Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def _recorded(data) -> tuple[str, str, dict | str]:
    """(exitlaw version, git commit, config) an input records about itself, ``"unknown"`` where it does not."""
    if not isinstance(data, dict):
        return "unknown", "unknown", "unknown"
    prov = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    version = prov.get("exitlaw_version") or versions.get("exitlaw") or "unknown"
    commit = prov.get("git_commit") or data.get("git_commit") or "unknown"
    if "config" in data:
        return str(version), str(commit), data["config"]
    # figure data record their parameters at the top level: the scalars (and lists of scalars) are the config
    scalar = (str, int, float, bool, type(None))
    config = {
        k: v
        for k, v in data.items()
        if k not in ("provenance", "figure")
        and (
            isinstance(v, scalar) or (isinstance(v, list) and all(isinstance(x, scalar) for x in v))
        )
    }
    return str(version), str(commit), config or "unknown"


def _origin(path: Path) -> str:
    try:
        Path(path).resolve().relative_to(RESULTS)
        return "shipped"
    except ValueError:
        return "this run"


def file_provenance(path: str | Path) -> dict:
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    version, commit, config = _recorded(data)
    cfg_sha = (
        "unknown"
        if config == "unknown"
        else hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    )
    return {
        "path": _rel(path),
        "origin": _origin(path),
        "sha256": _sha256(path),
        "exitlaw_version": version,
        "git_commit": commit,
        "config_sha256": cfg_sha,
        "config": config,
    }


def group_provenance(paths: list[Path], label: str) -> dict:
    """One record for several files: the sha256 of their sorted ``path:sha256`` lines, and each file's record."""
    files = [file_provenance(p) for p in sorted(paths)]
    combined = hashlib.sha256(
        "\n".join(f"{f['path']}:{f['sha256']}" for f in files).encode()
    ).hexdigest()
    versions = sorted({f["exitlaw_version"] for f in files})
    commits = sorted({f["git_commit"] for f in files})
    origins = sorted({f["origin"] for f in files})
    return {
        "path": label,
        "origin": ", ".join(origins),
        "sha256": combined,
        "exitlaw_version": ", ".join(versions),
        "git_commit": ", ".join(commits),
        "config_sha256": "per file",
        "files": files,
    }


def git_commit(root: Path = REPO) -> str:
    """HEAD of the repository at ``root`` (``-dirty`` when the work tree has changes), or ``"unknown"``."""
    return _git_commit(root)


def machine() -> dict:
    """The producing machine: platform, Python, torch build and the CPU model (what bit-for-bit depends on)."""
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    try:
        import torch  # lazy: torch is optional (the engine extra): the ledger records 'not installed'

        info["torch"] = torch.__version__
        info["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        info["torch"] = "not installed"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def stamp(data: dict, commit: str | None = None) -> dict:
    """``data`` with a ``provenance`` record: exitlaw version, git commit (``commit`` or HEAD now), machine."""
    return {
        **data,
        "provenance": {
            "exitlaw_version": __version__,
            "git_commit": commit or git_commit(),
            "machine": machine(),
        },
    }


# ----- gathering -------------------------------------------------------------------------------------------
def _load(path: Path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _read_checks(checks_dir: Path) -> tuple[dict | None, dict | None]:
    paths = [checks_dir / f"{k}.json" for k in KIT_VERIFIERS]
    if not all(p.is_file() for p in paths):
        return None, None
    return {k: _load(p) for k, p in zip(KIT_VERIFIERS, paths)}, group_provenance(
        paths, _rel(checks_dir) + "/*.json"
    )


def _read_paired(mini_deep: Path | None, sweep_dir: Path | None, inputs: dict, prov: dict) -> None:
    inputs["mini_deep"] = inputs["sim_exittrain_sweep"] = inputs["field_lab"] = None
    matched = RESULTS / SHIPPED["sim_exittrain_matched"]
    inputs["sim_exittrain_matched"] = None
    if matched.is_file():
        inputs["sim_exittrain_matched"] = [_load(matched)]
        prov["sim_exittrain_matched"] = file_provenance(matched)
    field = RESULTS / SHIPPED["field_lab"]
    if field.is_file():
        inputs["field_lab"] = _load(field)
        prov["field_lab"] = file_provenance(field)
    if mini_deep is not None and Path(mini_deep).is_file():
        inputs["mini_deep"] = _load(mini_deep)
        prov["mini_deep"] = file_provenance(mini_deep)
    for name in (
        "paper_regime",
        "paper_regime_data",
        "paper_regime_units",
        "authors_regime",
        "authors_regime_data",
        "sim_exittrain_authors",
        "verifier_latency_gpu",
    ):
        path = RESULTS / SHIPPED[name]
        inputs[name] = None
        if path.is_file():
            inputs[name] = _load(path)
            prov[name] = file_provenance(path)
    budgets = RESULTS / SHIPPED["mini_deep_budgets"]
    inputs["mini_deep_budgets"] = None
    if budgets.is_file():
        inputs["mini_deep_budgets"] = _load(budgets)
        prov["mini_deep_budgets"] = file_provenance(budgets)
    files = (
        sorted(Path(sweep_dir).glob("*.json"))
        if sweep_dir is not None and Path(sweep_dir).is_dir()
        else []
    )
    # e.g. a sweep's config.json is not an effect file
    files = [f for f in files if readable(_load(f))]
    if files:
        inputs["sim_exittrain_sweep"] = [_load(f) for f in files]
        prov["sim_exittrain_sweep"] = group_provenance(files, _rel(Path(sweep_dir)) + "/*.json")


def gather_shipped(results_dir: str | Path = RESULTS) -> tuple[dict, dict]:
    """``(inputs, provenance)`` from the shipped inputs only; an absent optional file is ``None``."""
    root = Path(results_dir)
    inputs, prov = {}, {}
    for name in (*FIGURE_INPUTS, "mini"):
        p = root / SHIPPED[name]
        inputs[name] = _load(p) if p.is_file() else None
        if p.is_file():
            prov[name] = file_provenance(p)
    inputs["checks"], kit = _read_checks(root / SHIPPED["checks"])
    if kit:
        prov["checks"] = kit
    _read_paired(root / SHIPPED["mini_deep"], root / SHIPPED["sim_exittrain_sweep"], inputs, prov)
    for p in prov.values():
        p["origin"] = "shipped"
        for f in p.get("files", ()):
            f["origin"] = "shipped"
    return inputs, prov


def fill_this_run(prov: dict) -> dict:
    """Version and commit of this run's inputs that record none: the checkout's, marked ``filled``."""
    head = None
    for p in prov.values():
        if p.get("origin") != "this run":
            continue
        filled = []
        if p.get("exitlaw_version") in (None, "unknown"):
            p["exitlaw_version"] = __version__
            filled.append("version")
        if p.get("git_commit") in (None, "unknown"):
            head = head or git_commit()
            p["git_commit"] = head
            filled.append("commit")
        if filled:
            p["filled"] = (
                f"{' and '.join(filled)} of the checkout at ledger time (the file records none)"
            )
    return prov


def gather_inputs(
    figures_dir: str | Path,
    *,
    mini_dir: str | Path | None = None,
    latency_json=None,
    checks_dir: str | Path | None = None,
    mini_deep: str | Path | None = None,
    sweep_dir: str | Path | None = None,
    quick: bool = False,
    seed: int = 0,
) -> tuple[dict, dict]:
    """``(inputs, provenance)`` of a run: figure data in ``figures_dir`` (computed when missing), the mini
    run's results, kit reports; the paired-effect files default to the shipped ones."""
    from exitlaw.paper_repro.figure_inputs import (  # lazy: matplotlib draws a missing figure
        make_figure,
    )

    figures_dir = Path(figures_dir)
    inputs, prov = {}, {}
    for name in FIGURE_INPUTS:
        path = figures_dir / f"{name}.json"
        if not path.is_file():
            make_figure(
                name,
                figures_dir,
                seed=seed,
                quick=quick,
                mini_dir=mini_dir,
                latency_json=latency_json,
            )
        inputs[name] = _load(path)
        prov[name] = file_provenance(path)
    inputs["mini"] = None
    if mini_dir is not None:
        res = Path(mini_dir) / "results.json"
        inputs["mini"] = _load(res)
        prov["mini"] = file_provenance(res)
    inputs["checks"] = None
    if checks_dir is not None:
        inputs["checks"], kit = _read_checks(Path(checks_dir))
        if kit:
            prov["checks"] = kit
    _read_paired(
        Path(mini_deep) if mini_deep else RESULTS / SHIPPED["mini_deep"],
        Path(sweep_dir) if sweep_dir else RESULTS / SHIPPED["sim_exittrain_sweep"],
        inputs,
        prov,
    )
    return inputs, fill_this_run(prov)


def _header(prov: dict) -> dict:
    """The ledger's header: which inputs this run made and which are shipped (docs/design.md §1.11)."""

    def names(origin: str) -> str:
        return ", ".join(n for n, p in prov.items() if origin in str(p.get("origin"))) or "none"

    dirty = [n for n, p in prov.items() if "dirty" in str(p.get("git_commit"))]
    return {
        "exitlaw_version": __version__,
        "scale": "cpu",
        "inputs from this run": names("this run"),
        "inputs shipped (paper_repro/results)": names("shipped"),
        "inputs from uncommitted code (dirty)": ", ".join(dirty) or "none",
        "rules": "paper_repro/verdicts.py (R0-R5), claim table paper_repro/ledger/claims.py",
    }


def make_ledger(
    figures_dir,
    out_dir,
    *,
    mini_dir=None,
    latency_json=None,
    checks_dir=None,
    mini_deep=None,
    sweep_dir=None,
    quick: bool = False,
    seed: int = 0,
    overwrite: bool = False,
):
    """Gather a run's inputs, build the rows, write ledger.md/json into ``out_dir``; return ``(rows, md, js)``."""
    inputs, prov = gather_inputs(
        figures_dir,
        mini_dir=mini_dir,
        latency_json=latency_json,
        checks_dir=checks_dir,
        mini_deep=mini_deep,
        sweep_dir=sweep_dir,
        quick=quick,
        seed=seed,
    )
    rows = build_ledger(inputs, prov)
    md, js = write_ledger(rows, out_dir, prov, header=_header(prov), overwrite=overwrite)
    return rows, md, js


def ledger_from_shipped(
    out_dir: str | Path = RESULTS, *, results_dir: str | Path = RESULTS, overwrite: bool = False
) -> tuple[list[dict], Path, Path]:
    """Rebuild ``ledger.md`` / ``ledger.json`` from the shipped inputs only; return ``(rows, md, js)``."""
    inputs, prov = gather_shipped(results_dir)
    rows = build_ledger(inputs, prov)
    md, js = write_ledger(rows, out_dir, prov, header=_header(prov), overwrite=overwrite)
    return rows, md, js


def make_shipped_inputs(
    results_dir: str | Path = RESULTS, *, seed: int = 0, overwrite: bool = False, log=print
) -> list[Path]:
    """Recompute the shipped CPU inputs (figure data, latency bench, kit reports), stamped with provenance."""
    from exitlaw.figures import (  # lazy: matplotlib (figures extra), not for the ledger
        registry,
        style,
    )
    from exitlaw.simulate.kit.conformance import (  # lazy: scipy (simulate extra), not for the ledger
        load_verifier,
        run_kit,
    )

    out = Path(results_dir) / "ledger_inputs"
    targets = [out / f"{n}.json" for n in FIGURE_INPUTS] + [
        out / "checks" / f"{k}.json" for k in KIT_VERIFIERS
    ]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(existing)} exist; pass overwrite=True (--overwrite) to replace them"
        )
    (out / "checks").mkdir(parents=True, exist_ok=True)
    commit = git_commit()  # the code as it was when the run started
    for name in FIGURE_INPUTS:
        data = registry.figure_module(name).compute(seed=seed, quick=False)
        log(
            f"wrote {style.write_data(stamp(data | {'quick': False}, commit), out, name, overwrite=True)}"
        )
    for k in KIT_VERIFIERS:
        spec = f"exitlaw.simulate.verifiers:{k}"
        report = run_kit(load_verifier(spec), name=spec, seed=seed).to_json()
        atomic_write_text(
            out / "checks" / f"{k}.json", json.dumps(stamp(report, commit), indent=1) + "\n"
        )
        log(f"wrote {out / 'checks' / f'{k}.json'}")
    return targets
