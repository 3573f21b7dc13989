"""The ledger's "this run" rows report a dirty working tree (issue 52), checked on the whole source text,
not on its prefix: ``git_commit`` is ``-dirty`` exactly when a tracked file changed (modified or staged;
an untracked file alone is not), ``fill_this_run`` takes the checkout's commit dirty or not and keeps a
file's own record, ``row_source`` is pinned for each origin x dirty x measured, and a ledger made over
a run from a dirty (or clean) checkout flags every ``this run`` part of every row, its header and its
inputs table (or none of them), while a shipped input is flagged by its own commit only."""

from __future__ import annotations

import json
import re

import pytest

from exitlaw.paper_repro.ledger import CLAIMS
from exitlaw.paper_repro.ledger_inputs import RESULTS, fill_this_run

_THIS_RUN = re.compile(
    r"^this run \((?P<name>\w+), (?P<path>[^,()]+)(?P<dirty>, DIRTY: made from uncommitted changes)?\)$"
)


def _git(root, *args):
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_git_commit_is_dirty_iff_a_tracked_file_changed(tmp_path):
    """Clean: the bare 40-hex HEAD; a modified or a staged tracked file: ``-dirty``; an untracked file
    alone: clean (it is not code the run imported from git); not a repository: ``unknown``."""
    from exitlaw.theory.infra.provenance import git_commit

    assert git_commit(tmp_path) == "unknown"
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    clean = git_commit(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", clean)
    (tmp_path / "new.py").write_text("y = 2\n")  # untracked only
    assert git_commit(tmp_path) == clean
    (tmp_path / "a.py").write_text("x = 2\n")  # modified, unstaged
    assert git_commit(tmp_path) == clean + "-dirty"
    _git(tmp_path, "add", "a.py")  # staged
    assert git_commit(tmp_path) == clean + "-dirty"
    _git(tmp_path, "commit", "-q", "-m", "two")
    assert re.fullmatch(r"[0-9a-f]{40}", git_commit(tmp_path)) and git_commit(tmp_path) != clean


@pytest.mark.parametrize("head", ["a" * 40, "b" * 40 + "-dirty"])
def test_fill_this_run_takes_the_checkouts_commit_dirty_or_not(monkeypatch, head):
    import exitlaw.paper_repro.ledger_inputs as li

    monkeypatch.setattr(li, "git_commit", lambda root=li.REPO: head)
    prov = {
        "mini": {"origin": "this run", "exitlaw_version": "9.9", "git_commit": "unknown"},
        "own": {"origin": "this run", "exitlaw_version": "unknown", "git_commit": "c" * 40},
        "shipped": {"origin": "shipped", "exitlaw_version": "unknown", "git_commit": "unknown"},
    }
    fill_this_run(prov)
    assert prov["mini"]["git_commit"] == head and prov["mini"]["exitlaw_version"] == "9.9"
    assert prov["mini"]["filled"].startswith("commit of the checkout")
    assert prov["own"]["git_commit"] == "c" * 40  # a file's own record is kept
    assert prov["own"]["filled"].startswith("version of the checkout")
    assert prov["shipped"] == {
        "origin": "shipped",
        "exitlaw_version": "unknown",
        "git_commit": "unknown",
    }


@pytest.mark.parametrize("dirty", [False, True])
@pytest.mark.parametrize("origin", ["this run", "shipped"])
@pytest.mark.parametrize("measured", [True, False])
def test_row_source_in_full_for_each_origin_and_commit(dirty, origin, measured):
    from exitlaw.paper_repro.ledger import row_source

    claim = {c.key: c for c in CLAIMS}["tev_stage_savings"]
    commit = "0123456789abcdef" * 2 + "01234567" + ("-dirty" if dirty else "")
    prov = {"verifier_latency": {"origin": origin, "path": "x/vl.json", "git_commit": commit}}
    flag = ", DIRTY: made from uncommitted changes" if dirty else ""
    want = (
        f"this run (verifier_latency, x/vl.json{flag})"
        if origin == "this run"
        else f"shipped (x/vl.json, commit 0123456789ab{flag})"
    ) + ("" if measured else " (not measured)")
    assert row_source(claim, prov, measured) == want
    assert row_source(claim, {}, measured).startswith("missing (verifier_latency: not an input")


def _run_figures(tmp_path, commit=None):
    from exitlaw.paper_repro.ledger_inputs import FIGURE_INPUTS

    figs = tmp_path / "figs"
    figs.mkdir(exist_ok=True)
    for name in FIGURE_INPUTS:
        data = json.loads((RESULTS / "ledger_inputs" / f"{name}.json").read_text())
        data.pop("provenance", None)
        if commit is not None:
            data["provenance"] = {"exitlaw_version": "0.1.0", "git_commit": commit}
        (figs / f"{name}.json").write_text(json.dumps(data))
    return figs


@pytest.mark.parametrize("dirty", [True, False])
def test_a_ledger_over_a_run_from_a_dirty_checkout_flags_every_this_run_part(
    monkeypatch, tmp_path, dirty
):
    """The checkout the ledger runs in is dirty (or clean): every ``this run`` part of every row says so
    (or does not), the header names those inputs, and the markdown's inputs table marks them."""
    import exitlaw.paper_repro.ledger_inputs as li

    head = "d" * 40 + ("-dirty" if dirty else "")
    monkeypatch.setattr(li, "git_commit", lambda root=li.REPO: head)
    rows, md, js = li.make_ledger(_run_figures(tmp_path), tmp_path / "ledger")
    ledger = json.loads(js.read_text())
    this_run = set(li.FIGURE_INPUTS)
    seen = set()
    for r in rows:
        for part in (p.strip() for p in r["source"].split(";")):
            m = _THIS_RUN.match(part.removesuffix(" (not measured)"))
            if part.startswith("this run"):
                assert m, part
                assert m["name"] in this_run and bool(m["dirty"]) == dirty, (r["key"], part)
                assert m["path"] == ledger["inputs"][m["name"]]["path"]
                seen.add(m["name"])
            elif part.startswith("shipped ("):  # flagged by the shipped file's own commit only
                own = [
                    n for n in r["inputs"] if ledger["inputs"].get(n, {}).get("path", "") in part
                ]
                assert own, part
                assert ("DIRTY" in part) == any(
                    "dirty" in ledger["inputs"][n]["git_commit"] for n in own
                ), part
    assert seen == this_run  # every run input feeds a row
    shipped_dirty = {
        n
        for n, p in ledger["inputs"].items()
        if p["origin"] != "this run" and "dirty" in p["git_commit"]
    }
    header = ledger["header"]["inputs from uncommitted code (dirty)"]
    got = set(header.split(", ")) if header != "none" else set()
    assert got == (this_run if dirty else set()) | shipped_dirty
    table = [
        line
        for line in md.read_text().splitlines()
        if line.startswith(tuple(f"| {n} |" for n in this_run))
    ]
    assert len(table) == len(this_run)
    assert all(("DIRTY: uncommitted changes" in line) == dirty for line in table)
    assert all(f"{head} (DIRTY" in line or not dirty for line in table)


def test_a_run_file_recording_a_dirty_commit_is_flagged_from_a_clean_checkout(
    monkeypatch, tmp_path
):
    import exitlaw.paper_repro.ledger_inputs as li

    monkeypatch.setattr(li, "git_commit", lambda root=li.REPO: "e" * 40)
    rows, md, js = li.make_ledger(
        _run_figures(tmp_path, commit="f" * 40 + "-dirty"), tmp_path / "ledger"
    )
    row = {r["key"]: r for r in rows}["tev_stage_savings"]
    m = _THIS_RUN.match(row["source"])
    assert m and m["name"] == "verifier_latency" and m["dirty"]
    rec = json.loads(js.read_text())["inputs"]["verifier_latency"]
    assert rec["git_commit"] == "f" * 40 + "-dirty" and "commit" not in rec.get("filled", "")


@pytest.mark.parametrize("complete", [True, False])
def test_a_runs_kit_reports_are_this_runs_input_only_when_every_one_is_there(
    monkeypatch, tmp_path, complete
):
    """A checks folder holding every kit report is one ``this run`` input (its group record, dirty
    flag included); with one report missing it is no input at all (the row says missing)."""
    import shutil

    import exitlaw.paper_repro.ledger_inputs as li

    monkeypatch.setattr(li, "git_commit", lambda root=li.REPO: "a" * 40 + "-dirty")
    checks = tmp_path / "checks"
    shutil.copytree(RESULTS / "ledger_inputs" / "checks", checks)
    for f in checks.glob("*.json"):  # records no commit: the checkout's (dirty) is filled in
        data = json.loads(f.read_text())
        data.pop("provenance", None)
        f.write_text(json.dumps(data))
    if not complete:
        next(iter(sorted(checks.glob("*.json")))).unlink()
    rows, md, js = li.make_ledger(_run_figures(tmp_path), tmp_path / "ledger", checks_dir=checks)
    row = {r["key"]: r for r in rows}["kit_exact_saturating"]
    inputs = json.loads(js.read_text())["inputs"]
    if complete:
        assert inputs["checks"]["origin"] == "this run"
        assert len(inputs["checks"]["files"]) == len(li.KIT_VERIFIERS)
        m = _THIS_RUN.match(row["source"])
        assert m and m["name"] == "checks" and m["dirty"], row["source"]
    else:
        assert "checks" not in inputs
        assert row["source"].startswith("missing (checks: not an input of this ledger)")


def test_a_ledger_over_a_run_keeps_the_shipped_sweep_as_an_input(tmp_path):
    from exitlaw.paper_repro.ledger_inputs import make_ledger

    rows, md, js = make_ledger(_run_figures(tmp_path), tmp_path / "ledger")
    rec = json.loads(js.read_text())["inputs"]["sim_exittrain_sweep"]
    assert rec["origin"] == "shipped" and rec["files"] and rec["path"].endswith("/*.json")
    sweep_rows = [r for r in rows if "sim_exittrain_sweep" in r["inputs"]]
    assert sweep_rows and all(r["source"].startswith("shipped (") for r in sweep_rows)


def test_recomputing_the_shipped_inputs_refuses_to_overwrite_naming_the_files(tmp_path):
    from exitlaw.paper_repro.ledger_inputs import FIGURE_INPUTS, make_shipped_inputs

    out = tmp_path / "ledger_inputs"
    out.mkdir()
    first = out / f"{FIGURE_INPUTS[0]}.json"
    first.write_text("{}")
    with pytest.raises(FileExistsError, match=f"{first}.*--overwrite"):
        make_shipped_inputs(tmp_path, log=lambda *a: None)
    assert first.read_text() == "{}"
