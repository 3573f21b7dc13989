"""Provenance: one reader of ``/proc/cpuinfo`` behind the ledger's CPU hash and the mini run's machine record."""

import hashlib
from pathlib import Path

import pytest

from exitlaw.theory.infra import provenance


def test_cpu_fields_reads_first_cpu_only(tmp_path, monkeypatch):
    fake = tmp_path / "cpuinfo"
    fake.write_text(
        "processor\t: 0\nmodel name\t: Alpha: X\nflags\t\t: a b c\n\n"
        "processor\t: 1\nmodel name\t: Beta\nflags\t\t: z\n",
        encoding="utf-8",
    )
    real_path = Path

    def fake_path(p, *a):
        return real_path(fake) if str(p) == "/proc/cpuinfo" else real_path(p, *a)

    monkeypatch.setattr(provenance, "Path", fake_path)
    assert provenance.cpu_fields() == {"model name": "Alpha: X", "flags": "a b c"}
    assert provenance.cpu_info() == {
        "cpu_model": "Alpha: X",
        "cpu_flags_sha256": hashlib.sha256(b"a b c").hexdigest()[:16],
    }


def test_unreadable_cpuinfo_gives_empty_records(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "Path", lambda p, *a: tmp_path / "missing")
    assert provenance.cpu_fields() == {} and provenance.cpu_info() == {}


def test_mini_machine_record_uses_the_same_reader():
    pytest.importorskip("torch")
    from exitlaw.paper_repro.mini.table import machine_info

    fields = provenance.cpu_fields()
    info = machine_info()
    assert info["cpu_flags"] == fields.get("flags", "")
    if fields:
        assert info["cpu_model"] == fields["model name"]
