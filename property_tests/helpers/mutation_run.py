"""A mutation run in a copy of the tree: one-line mutants of one module, each run against its guarding tests.

Run from the repository root (minutes; one pytest process per mutant)::

    python -m property_tests.helpers.mutation_run --module simulate/audit/run.py \\
        --tests property_tests/simulate/audit/test_audit_rules.py --sample 20 --seed 0

Unlike ``.ci/mutation`` (Cosmic Ray, in place: the tree must be clean) and ``self_mutation.py`` (a
curated list, planted in place), this never edits the checkout: the working tree (tracked and untracked
files, no ``.git``, ``.venv`` or ``runs``) is copied to a temporary folder once, and each mutant is
written into the copy, run, and the original put back. The editable install's finder maps
``exitlaw.<part>`` to the checkout's folders, so the copy's ``exitlaw/`` gets links to its own
``theory``, ``simulate``, ``engine``, ``figures`` and ``paper_repro``: the copy imports its own code
(and it is a git repository of its own, committed once, so a mutant shows as a dirty tree)
(a run first checks that the unmutated copy passes the tests, and that the module imported is the
copy's).

Mutants (from the module's syntax tree; strings, docstrings too, never mutated): comparison flips (``<`` and ``<=``,
``>`` and ``>=``, ``==`` and ``!=``, ``in`` and ``not in``, ``is`` and ``is not``), arithmetic swaps
(``+`` and ``-``, ``*`` and ``/``, ``//`` to ``/``, ``**`` to ``*``, augmented assignments alike),
``and`` / ``or``, a dropped ``not``, numeric constants off by one (``n + 1``, and ``n - 1`` for
``n >= 1``), ``True`` / ``False``, ``min`` / ``max``, ``any`` / ``all``, and the two arguments of a
two-argument call swapped. ``--sample N`` draws N of them (seeded); ``--lines A-B`` keeps those lines.
``--rev REV`` mutates the tree of a commit (``git archive``) instead of the working tree, so other
people's uncommitted edits in a shared checkout stay out. ``--rerun BEFORE.json`` runs only the
survivors of an earlier run (same module text, checked) against a larger test set and scores them
with that run's kills: the *before / after* of docs/mutation_scores.md; ``--overlay FILE...`` lays
working-tree files (tests written since) over the commit's tree.
A mutant is *killed* when the tests fail (or run past ``--timeout`` or 3 GB of memory: *timeout*),
*survived* when they pass. The
exit status is 0 when every mutant was killed, 1 otherwise, 2 when the unmutated copy fails.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("theory", "simulate", "engine", "figures", "paper_repro")  # package-dir of pyproject.toml
SKIP_DIRS = {".git", ".venv", "runs", "site", "__pycache__", ".hypothesis", ".pytest_cache"}

_CMP = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
}
_BIN = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
    ast.Pow: ("**", "*"),
}
_CALLS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Mutant:
    line: int
    what: str
    start: int  # character offsets into the source
    end: int
    new: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.new + source[self.end :]


def _offsets(source: str) -> list[int]:
    out, pos = [], 0
    for line in source.splitlines(keepends=True):
        out.append(pos)
        pos += len(line)
    return out


def mutants_of(source: str) -> list[Mutant]:
    """Every one-line mutant of ``source`` the module docstring lists, each compiling."""
    tree = ast.parse(source)
    starts = _offsets(source)

    def at(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        text = source[starts[line - 1] :].encode("utf-8")[:col].decode("utf-8", "replace")
        return starts[line - 1] + len(text)

    def span(node) -> tuple[int, int]:
        return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)

    def between(left, right, old: str, new: str, what: str, line: int) -> list[Mutant]:
        a, b = span(left)[1], span(right)[0]
        gap = source[a:b]
        i = gap.find(old)
        if i < 0:
            return []
        return [Mutant(line, what, a + i, a + i + len(old), new)]

    out: list[Mutant] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if type(op) in _CMP:
                old, new = _CMP[type(op)]
                out += between(node.left, right, old, new, f"{old} -> {new}", line)
                if old in ("<", ">", "<=", ">="):  # the direction flipped too
                    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[old]
                    out += between(node.left, right, old, flip, f"{old} -> {flip}", line)
            elif isinstance(op, ast.In):
                out += between(node.left, right, "in", "not in", "in -> not in", line)
            elif isinstance(op, ast.NotIn):
                out += between(node.left, right, "not in", "in", "not in -> in", line)
            elif isinstance(op, ast.Is):
                out += between(node.left, right, "is", "is not", "is -> is not", line)
            elif isinstance(op, ast.IsNot):
                out += between(node.left, right, "is not", "is", "is not -> is", line)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            old, new = _BIN[type(node.op)]
            out += between(node.left, node.right, old, new, f"{old} -> {new}", line)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BIN:
            old, new = _BIN[type(node.op)]
            out += between(node.target, node.value, old + "=", new + "=", f"{old}= -> {new}=", line)
        elif isinstance(node, ast.BoolOp) and len(node.values) >= 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            out += between(node.values[0], node.values[1], old, new, f"{old} -> {new}", line)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            a, b = span(node)
            c = span(node.operand)[0]
            out.append(Mutant(line, "not dropped", a, c, ""))
        elif isinstance(node, ast.Constant):  # numbers and booleans only: strings are never mutated
            a, b = span(node)
            v = node.value
            if isinstance(v, bool):
                out.append(Mutant(line, f"{v} -> {not v}", a, b, str(not v)))
            elif (
                isinstance(v, (int, float))
                and source[a:b].replace(".", "").replace("_", "").isdigit()
            ):
                out.append(Mutant(line, f"{source[a:b]} -> {v + 1!r}", a, b, repr(v + 1)))
                if v >= 1:
                    out.append(Mutant(line, f"{source[a:b]} -> {v - 1!r}", a, b, repr(v - 1)))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _CALLS:
                a, b = span(f)
                out.append(Mutant(line, f"{f.id} -> {_CALLS[f.id]}", a, b, _CALLS[f.id]))
            if (
                len(node.args) == 2
                and not node.keywords
                and not any(isinstance(x, ast.Starred) for x in node.args)
            ):
                (a1, b1), (a2, b2) = span(node.args[0]), span(node.args[1])
                if source[a1:b1] != source[a2:b2] and b1 <= a2:
                    swapped = source[a2:b2] + source[b1:a2] + source[a1:b1]
                    out.append(Mutant(line, "two arguments swapped", a1, b2, swapped))
    # the line of the changed text itself (a node's lineno is where the node starts)
    out = [Mutant(source.count("\n", 0, m.start) + 1, m.what, m.start, m.end, m.new) for m in out]
    good = []
    for m in out:
        try:
            ast.parse(m.apply(source))
        except SyntaxError:
            continue
        good.append(m)
    return sorted(set(good), key=lambda m: (m.start, m.what))


def copy_tree(dest: Path, rev: str | None = None, overlay: tuple[str, ...] = ()) -> None:
    """The working tree (tracked and untracked, not ignored build output), or the tree of the commit
    ``rev`` (``git archive``: others' uncommitted edits left out), into ``dest``, with the links that
    make ``dest``'s ``exitlaw`` package import ``dest``'s own code (module docstring)."""

    def ignore(folder, names):
        return [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")]

    if rev is None:
        shutil.copytree(ROOT, dest, ignore=ignore, symlinks=True, dirs_exist_ok=True)
    else:
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    for rel in overlay:  # files of the working tree laid over the commit's (newer tests)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, dest / rel)
    # a git repository of its own (the provenance code reads the commit and the dirty flag)
    git = ["git", "-c", "user.name=mutation", "-c", "user.email=mutation@localhost"]
    subprocess.run(git + ["init", "-q"], cwd=dest, check=True)
    subprocess.run(git + ["add", "-A"], cwd=dest, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "copy"], cwd=dest, check=True)
    for part in PARTS:
        link = dest / "exitlaw" / part
        if not link.exists():
            link.symlink_to(Path("..") / part, target_is_directory=True)


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_tests(
    copy: Path, tests: list[str], timeout: float, max_rss: float = 3e9
) -> tuple[str, float, str]:
    """``("killed" | "survived" | "timeout", seconds, last output line)`` of the tests in ``copy``; a run
    past ``timeout`` seconds or ``max_rss`` bytes of memory (a mutant that loops and grows a list) is
    stopped and counts as ``timeout`` (a kill: the tests did not pass)."""
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "dev"),
    }
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            cmd, cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT, text=True
        )
        why = None
        while proc.poll() is None:
            if time.perf_counter() - t0 > timeout:
                why = f"past {timeout:g} s"
            elif _rss_bytes(proc.pid) > max_rss:
                why = f"past {max_rss / 1e9:g} GB of memory"
            if why:
                proc.kill()
                proc.wait()
                return "timeout", time.perf_counter() - t0, why
            time.sleep(0.2)
        out.seek(0)
        lines = out.read().strip().splitlines() or [""]
    return ("killed" if proc.returncode else "survived"), time.perf_counter() - t0, lines[-1]


def _check_imports_copy(copy: Path, module: str) -> None:
    dotted = "exitlaw." + module[: -len(".py")].replace("/", ".")
    if dotted.endswith(".__init__"):
        dotted = dotted[: -len(".__init__")]
    code = f"import {dotted} as m, pathlib; print(pathlib.Path(m.__file__).resolve())"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True
    )
    where = out.stdout.strip()
    if out.returncode or not where.startswith(str(copy.resolve())):
        raise SystemExit(
            f"the copy imports {dotted} from {where or out.stderr[-300:]!r}, not from {copy}"
        )


def parse_lines(spec: str | None):
    if not spec:
        return None
    keep = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        keep.update(range(int(a), int(b or a) + 1))
    return keep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", required=True, help="path of the module, from the repository root")
    ap.add_argument("--tests", required=True, nargs="+", help="test files or node ids to run")
    ap.add_argument("--sample", type=int, default=20, help="mutants drawn (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lines", help="only mutants on these lines, e.g. 10-40,55")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run")
    ap.add_argument("--list", action="store_true", help="print the drawn mutants and stop")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument(
        "--overlay",
        nargs="+",
        help="with --rev: these files of the working tree replace the commit's (tests written since, "
        "run against the module as it was)",
    )
    ap.add_argument(
        "--rerun",
        help="a --json file of an earlier run of this module: run only its survivors again (tests "
        "only added since: a mutant killed then stays killed) and score them with its kills",
    )
    ap.add_argument(
        "--rev",
        help="mutate the tree of this commit (e.g. HEAD) instead of the working tree, whose "
        "uncommitted edits (other people's, in a shared checkout) are then left out",
    )
    args = ap.parse_args(argv)

    path = ROOT / args.module
    if args.rev is None and (not path.is_file() or path.suffix != ".py"):
        ap.error(f"--module {args.module}: not a Python file under {ROOT}")
    for t in args.tests:
        if args.rev is None and not (ROOT / t.split("::")[0]).exists():
            ap.error(f"--tests {t}: no such file")
    if args.rev is None:
        source = path.read_text(encoding="utf-8")
    else:
        shown = subprocess.run(
            ["git", "show", f"{args.rev}:{args.module}"], cwd=ROOT, capture_output=True, text=True
        )
        if shown.returncode:
            ap.error(f"--module {args.module}: not in {args.rev} ({shown.stderr.strip()})")
        source = shown.stdout
    lines = parse_lines(args.lines)
    every = [m for m in mutants_of(source) if lines is None or m.line in lines]
    chosen = every
    if args.sample and len(every) > args.sample:
        chosen = sorted(random.Random(args.seed).sample(every, args.sample), key=lambda m: m.start)
    earlier = []
    if args.rerun:
        before = json.loads(Path(args.rerun).read_text(encoding="utf-8"))
        if before["module"] != args.module:
            ap.error(f"--rerun {args.rerun} is a run of {before['module']}, not {args.module}")
        keys = ("line", "what", "start", "end", "new")
        for r in before["results"]:
            if source[r["start"] : r["end"]] != r["old"]:
                ap.error(f"--rerun: {args.module} changed since {args.rerun} (line {r['line']})")
        earlier = [r for r in before["results"] if r["status"] != "survived"]
        chosen = [
            Mutant(*(r[k] for k in keys)) for r in before["results"] if r["status"] == "survived"
        ]
        every = every if before.get("mutants") is None else [None] * before["mutants"]
    where = f" at {args.rev}" if args.rev else ""
    print(
        f"{args.module}{where}: {len(every)} mutants, {len(chosen)} drawn (seed {args.seed})"
        + (f", survivors of {args.rerun} rerun" if args.rerun else ""),
        flush=True,
    )
    if args.list:
        for m in chosen:
            print(f"  line {m.line}: {m.what}: {source[m.start : m.end]!r} -> {m.new!r}")
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="mutation_run_") as tmp:
        copy = Path(tmp) / "tree"
        copy_tree(copy, args.rev, tuple(args.overlay or ()))
        _check_imports_copy(copy, args.module)
        status, secs, last = run_tests(copy, args.tests, args.timeout)
        print(f"unmutated copy: {status} in {secs:.1f} s [{last}]", flush=True)
        if status != "survived":
            print("the unmutated copy fails its tests: no score", file=sys.stderr)
            return 2
        target = copy / args.module
        for m in chosen:
            target.write_text(m.apply(source), encoding="utf-8")
            try:
                status, secs, last = run_tests(copy, args.tests, args.timeout)
            finally:
                target.write_text(source, encoding="utf-8")
            results.append({**asdict(m), "old": source[m.start : m.end], "status": status})
            print(
                f"{status.upper():9} {secs:6.1f}s  line {m.line}: {m.what}: "
                f"{source[m.start : m.end]!r} -> {m.new!r}  [{last}]",
                flush=True,
            )
    if earlier:
        print(f"killed by the earlier run ({args.rerun}): {len(earlier)}")
    results = earlier + results
    killed = sum(r["status"] != "survived" for r in results)
    print(f"score: {killed}/{len(results)} killed ({args.module})")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "module": args.module,
                    "tests": args.tests,
                    "seed": args.seed,
                    "rev": args.rev,
                    "overlay": args.overlay,
                    "mutants": len(every),
                    "killed": killed,
                    "results": results,
                },
                indent=1,
            )
            + "\n"
        )
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
