"""The mini-scale corpus: the Python standard library's own source files.

Every Python install carries it, so the mini reproduction needs no download.

* **code domain**: ``*.py`` files of the standard library, minus ``site-packages``,
  the test suites and the generated codec tables; split into train / held-out
  **by file** with a keyed hash of the relative path (deterministic, independent of
  the file-system order and of which other files exist);
* **prose domain**: the English help texts of ``pydoc_data/topics.py`` (parsed with
  :mod:`ast`, never imported), split by topic name the same way;
* **tokenizer**: a byte-level BPE trained with the ``tokenizers`` library on the
  training split and saved in Hugging Face format (``tokenizer.json`` +
  ``tokenizer_config.json``), so ``AutoTokenizer.from_pretrained(dir)`` loads it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import sysconfig
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from exitlaw.theory.infra.atomic_io import atomic_dir

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
MASK_TOKEN = "<|mask|>"  # the DFlash drafter's mask token
SPECIAL_TOKENS = (EOS_TOKEN, PAD_TOKEN, MASK_TOKEN)
PROSE_FILE = "pydoc_data/topics.py"
_SKIP_DIRS = {
    "site-packages",
    "dist-packages",
    "test",
    "tests",
    "idle_test",
    "__pycache__",
    "lib2to3",
}
_SKIP_PREFIXES = (
    "encodings/cp",
    "encodings/iso8859",
    "encodings/mac_",
    "encodings/koi8",
    "encodings/kz1048",
)


def stdlib_dir() -> Path:
    """The directory of the running interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


def list_code_files(root: str | Path | None = None) -> list[str]:
    """Relative paths (``/``-separated, sorted) of the code-domain source files under ``root``."""
    root = Path(root) if root is not None else stdlib_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"standard library directory {root} does not exist")
    out = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if (
            set(rel.split("/")[:-1]) & _SKIP_DIRS
            or rel == PROSE_FILE
            or rel.startswith(_SKIP_PREFIXES)
        ):
            continue
        out.append(rel)
    if not out:
        raise FileNotFoundError(f"no Python source files found under {root}")
    return sorted(out)


def _in_heldout(name: str, fraction: float, seed: int) -> bool:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < fraction


def split_names(names, heldout_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Deterministic train / held-out split of ``names`` by a keyed SHA-256 hash."""
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must lie in (0, 1), got {heldout_fraction}")
    names = sorted(set(names))
    held = [n for n in names if _in_heldout(n, heldout_fraction, seed)]
    held_set = set(held)
    return [n for n in names if n not in held_set], held


def load_prose_topics(root: str | Path | None = None) -> dict[str, str]:
    """The ``topics`` dict literal of ``pydoc_data/topics.py``, read with :func:`ast.literal_eval`."""
    root = Path(root) if root is not None else stdlib_dir()
    path = root / PROSE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"prose file {path} does not exist")
    module = ast.parse(path.read_text(encoding="utf-8"))
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "topics" for t in node.targets
        ):
            topics = ast.literal_eval(node.value)
            if not isinstance(topics, dict) or not topics:
                raise ValueError(f"{path}: 'topics' is not a non-empty dict")
            return {str(k): str(v) for k, v in topics.items()}
    raise ValueError(f"{path}: no 'topics = {{...}}' assignment found")


@dataclass(frozen=True)
class CorpusSplit:
    """File / topic names of each split; ``root`` and the Python version pin the source."""

    root: str
    python: str
    seed: int
    heldout_fraction: float
    train_code: list[str] = field(default_factory=list)
    heldout_code: list[str] = field(default_factory=list)
    train_prose: list[str] = field(default_factory=list)
    heldout_prose: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def code_texts(self, which: str) -> list[str]:
        names = {"train": self.train_code, "heldout": self.heldout_code}[which]
        root = Path(self.root)
        return [(root / n).read_text(encoding="utf-8", errors="replace") for n in names]

    def prose_texts(self, which: str) -> list[str]:
        names = {"train": self.train_prose, "heldout": self.heldout_prose}[which]
        topics = load_prose_topics(self.root)
        return [topics[n] for n in names]


def make_split(
    root: str | Path | None = None, *, heldout_fraction: float = 0.05, seed: int = 0
) -> CorpusSplit:
    """Split the code files and the prose topics into train / held-out (by file, by topic)."""
    root = Path(root) if root is not None else stdlib_dir()
    tc, hc = split_names(list_code_files(root), heldout_fraction, seed)
    tp, hp = split_names(load_prose_topics(root).keys(), max(heldout_fraction, 0.1), seed)
    if not hc or not hp:
        raise ValueError(
            f"held-out split is empty (fraction {heldout_fraction}); raise heldout_fraction"
        )
    return CorpusSplit(str(root), sys.version.split()[0], seed, heldout_fraction, tc, hc, tp, hp)


def train_tokenizer(texts, vocab_size: int, out_dir: str | Path):
    """Train a byte-level BPE on ``texts`` and save it in Hugging Face format; return the loaded tokenizer."""
    if vocab_size < 256 + len(SPECIAL_TOKENS) + 1:
        raise ValueError(
            f"vocab_size must exceed the 256 byte symbols plus specials, got {vocab_size}"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        mask_token=MASK_TOKEN,
        clean_up_tokenization_spaces=False,
    )
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:  # tokenizer.json appears only with every other file beside it
        fast.save_pretrained(str(tmp))
    return load_tokenizer(out_dir)


def load_tokenizer(path: str | Path):
    """Load a tokenizer saved by :func:`train_tokenizer` through transformers' ``AutoTokenizer``."""
    path = Path(path)
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{path} holds no tokenizer.json (not a saved tokenizer directory)")
    return AutoTokenizer.from_pretrained(str(path))


def encode_documents(tokenizer, texts, *, max_tokens: int | None = None) -> np.ndarray:
    """Token ids of the documents joined by the end-of-text token (``int32``), cut at ``max_tokens``."""
    eos = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    out: list[int] = []
    for text in texts:
        out.extend(tokenizer.encode(text, add_special_tokens=False))
        out.append(eos)
        if max_tokens is not None and len(out) >= max_tokens:
            break
    return np.asarray(out[:max_tokens] if max_tokens is not None else out, dtype=np.int32)


def load_token_array(path: str | Path) -> np.ndarray:
    """A saved token stream (``.npy``, 1-D integers); a truncated or corrupt file is an error naming it."""
    path = Path(path)
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as err:
        raise ValueError(
            f"{path} is truncated or corrupt ({err}); delete it to encode the corpus again"
        ) from None
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{path} holds a {arr.dtype} array of shape {arr.shape}, not a 1-D token stream"
        )
    return arr


def sample_prompts(
    tokenizer, texts, *, count: int, prompt_tokens: int, seed: int
) -> list[list[int]]:
    """``count`` prompts of ``prompt_tokens`` tokens cut at random offsets of random documents."""
    rng = np.random.default_rng(seed)
    docs = [
        ids
        for ids in (tokenizer.encode(t, add_special_tokens=False) for t in texts)
        if len(ids) > prompt_tokens
    ]
    if not docs:
        raise ValueError(f"no document is longer than {prompt_tokens} tokens")
    prompts = []
    for _ in range(count):
        ids = docs[int(rng.integers(len(docs)))]
        start = int(rng.integers(0, len(ids) - prompt_tokens))
        prompts.append([int(t) for t in ids[start : start + prompt_tokens]])
    return prompts


def split_fingerprint(split: CorpusSplit) -> str:
    """Short hash of a split's file lists (recorded with every artefact built from it)."""
    return hashlib.sha256(json.dumps(split.to_json(), sort_keys=True).encode()).hexdigest()[:16]
