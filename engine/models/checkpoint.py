"""Loading and saving checkpoints in their released on-disk formats.

* DFlash drafter: ``config.json`` (Qwen3 fields + ``block_size`` +
  ``dflash_config.{mask_token_id, target_layer_ids}``) and ``model.safetensors``
  (or a sharded ``model.safetensors.index.json``) with the tensor names of
  :func:`exitlaw.engine.models.dflash.expected_tensor_names` (no ``model.`` prefix;
  ``embed_tokens``/``lm_head`` are borrowed from the target and, if present, ignored).
* Target: any Hugging Face causal LM directory (``save_pretrained`` layout) or Hub id.

Every failure names the path and the offending tensor or field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import torch
from huggingface_hub import snapshot_download
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from exitlaw.engine.models.dflash import DFlashConfig, DFlashDrafter, expected_tensor_names
from exitlaw.engine.models.target import TargetModel
from exitlaw.theory.infra.atomic_io import atomic_path, atomic_write_text

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
SHARED_TENSORS = ("embed_tokens.weight", "lm_head.weight")


def resolve_checkpoint(path_or_id: str | Path) -> Path:
    """A local directory, or a Hub id downloaded through ``huggingface_hub`` (fails clearly offline)."""
    p = Path(path_or_id)
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"{p} is a file; a checkpoint is a directory with config.json")
        return p
    text = str(path_or_id)
    if text.count("/") == 1 and not text.startswith((".", "/", "~")):
        try:
            return Path(snapshot_download(text))
        except Exception as err:  # network/auth errors of many kinds: re-raise with the id named
            raise FileNotFoundError(
                f"{text!r} is not a local directory and could not be fetched from the Hub: "
                + (str(err).strip().splitlines() or [type(err).__name__])[0]
            ) from err
    raise FileNotFoundError(f"checkpoint directory {text!r} does not exist")


def _hub_id(text: str) -> bool:
    """``owner/name`` that is no local path: no leading ``.``/``/``/``~`` and no local ``owner`` folder."""
    return (
        text.count("/") == 1
        and not text.startswith((".", "/", "~"))
        and not Path(text).parent.exists()
    )


def check_model_path(path_or_id: str | Path | None, flag: str = "--target") -> None:
    """The one up-front check of a ``--target`` / ``--draft`` argument, before any tokenizer or
    weight is read: a local folder with a readable ``config.json`` of the right kind (a DFlash
    drafter for ``--draft``, anything else for ``--target``), or a Hub id ``owner/name`` (fetched
    later by :func:`resolve_checkpoint`). Raises a one-line ``FileNotFoundError`` / ``ValueError``
    naming the flag and the path. ``None`` (the flag not given) passes."""
    if path_or_id is None:
        return
    text = str(path_or_id)
    p = Path(text).expanduser()
    if not p.exists():
        if _hub_id(text):
            return
        raise FileNotFoundError(f"{flag} {text}: no such folder (and not a Hub id owner/name)")
    if not p.is_dir():
        raise ValueError(f"{flag} {text}: a file, not a model folder (a folder with config.json)")
    if not (p / "config.json").is_file():
        raise ValueError(f"{flag} {text}: not a model folder (it has no config.json)")
    try:
        raw = json.loads((p / "config.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{flag} {text}: config.json is not valid JSON ({err})") from None
    drafter = isinstance(raw, dict) and ("dflash_config" in raw or "block_size" in raw)
    if flag == "--draft" and not drafter:
        raise ValueError(
            f"{flag} {text}: not a DFlash drafter (config.json has neither block_size nor dflash_config)"
        )
    if flag != "--draft" and drafter:
        raise ValueError(f"{flag} {text}: a DFlash drafter checkpoint, not a target model")


def check_model_paths(target: str | Path | None, draft: str | Path | None = None) -> None:
    """:func:`check_model_path` of ``--target`` and ``--draft`` (either may be ``None``)."""
    check_model_path(target, "--target")
    check_model_path(draft, "--draft")


def _read_config(path: Path, what: str) -> dict:
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise ValueError(f"{path} is not a {what} checkpoint: it has no config.json")
    try:
        return json.loads(cfg_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{cfg_path} is not valid JSON ({err.msg})") from None


def _load_safetensors(file: Path) -> dict[str, torch.Tensor]:
    """One safetensors file; a truncated or corrupt file is a ``ValueError`` naming it."""
    if not file.is_file():
        raise ValueError(f"weight file {file} does not exist")
    try:
        return load_file(str(file))
    except Exception as err:  # safetensors raises its own error type (and OSError): name the file
        raise ValueError(
            f"{file} is not a readable safetensors file (truncated or corrupt?): {err}"
        ) from err


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    single, index = path / WEIGHTS, path / WEIGHTS_INDEX
    if single.is_file():
        return _load_safetensors(single)
    if index.is_file():
        try:
            shards = sorted(
                set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
            )
        except (
            json.JSONDecodeError,
            KeyError,
            TypeError,
            AttributeError,
            UnicodeDecodeError,
        ) as err:
            raise ValueError(f"{index} is not a valid safetensors index ({err})") from None
        out: dict[str, torch.Tensor] = {}
        for shard in shards:
            out.update(_load_safetensors(path / shard))
        return out
    raise ValueError(f"{path} is not a DFlash checkpoint: it has no {WEIGHTS} or {WEIGHTS_INDEX}")


def check_drafter_tensors(
    config: DFlashConfig, tensors: dict[str, torch.Tensor], where: str
) -> None:
    """Raise ``ValueError`` naming every missing, unexpected (misnamed) or mis-shaped tensor."""
    with torch.device("meta"):
        ref = DFlashDrafter(config).state_dict()
    have = {k for k in tensors if k not in SHARED_TENSORS}
    missing = [k for k in ref if k not in have]
    unexpected = sorted(have - set(ref))
    problems = []
    if missing:
        problems.append("missing tensor(s): " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected tensor(s) (misnamed?): " + ", ".join(unexpected))
    shapes = [
        f"{k} has shape {tuple(tensors[k].shape)}, expected {tuple(ref[k].shape)}"
        for k in ref
        if k in have and tuple(tensors[k].shape) != tuple(ref[k].shape)
    ]
    problems.extend(shapes)
    if problems:
        raise ValueError(f"DFlash checkpoint {where}: " + "; ".join(problems))


def load_drafter(
    path_or_id: str | Path, *, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> DFlashDrafter:
    """Load a released-format DFlash drafter (weights unchanged; cast to ``dtype`` if given)."""
    path = resolve_checkpoint(path_or_id)
    raw = _read_config(path, "DFlash drafter")
    if "dflash_config" not in raw and "block_size" not in raw:
        raise ValueError(
            f"{path} is not a DFlash checkpoint: config.json has neither block_size nor dflash_config"
        )
    config = DFlashConfig.from_dict(raw, where=str(path / "config.json"))
    tensors = _read_tensors(path)
    check_drafter_tensors(config, tensors, str(path))
    with torch.device("meta"):
        drafter = DFlashDrafter(config)
    state = {k: v for k, v in tensors.items() if k not in SHARED_TENSORS}
    drafter.load_state_dict(state, strict=True, assign=True)
    target_dtype = dtype or next(iter(state.values())).dtype
    return drafter.to(device=device, dtype=target_dtype).eval()


def save_drafter(drafter: DFlashDrafter, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``model.safetensors`` + ``config.json`` (last) in the released layout, each atomically."""
    path = Path(path)
    if (path / "config.json").exists() and not overwrite:
        raise FileExistsError(
            f"{path} already holds a checkpoint; pass overwrite=True to replace it"
        )
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in drafter.state_dict().items()}
    with atomic_path(path / WEIGHTS) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt"})
    # config.json last: a folder with it holds whole weights (an interrupted save leaves no config.json)
    atomic_write_text(path / "config.json", json.dumps(drafter.config.to_dict(), indent=2) + "\n")
    return path


def load_target(
    path_or_id: str | Path,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    layer_ids: Sequence[int] = (),
    attn_implementation: str = "sdpa",
    masked_attention: str = "math",
) -> TargetModel:
    """Load a Hugging Face causal LM as a :class:`TargetModel` exposing ``layer_ids``' hidden states
    (``masked_attention``: the kernels of its masked forwards, see :data:`~exitlaw.engine.models.target.MASKED_ATTENTION`)."""
    path = resolve_checkpoint(path_or_id)
    raw = _read_config(path, "target model")
    if "dflash_config" in raw:
        raise ValueError(f"{path} is a DFlash drafter checkpoint, not a target model")
    if not any(p.suffix == ".safetensors" or p.name.endswith(".bin") for p in path.iterdir()):
        raise ValueError(f"{path} is not a target model checkpoint: it has no weight files")
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            str(path),
            dtype=dtype or "auto",
            attn_implementation=attn_implementation,
            output_loading_info=True,
            # mis-shaped tensors are listed in the report
            # (not raised anonymously); the report is an error below
            ignore_mismatched_sizes=True,
        )
    except (
        Exception
    ) as err:  # transformers/safetensors raise many types for a bad file: name the folder
        raise ValueError(
            f"target checkpoint {path} could not be loaded: {type(err).__name__}: {err}"
        ) from err
    check_loading_info(info, f"target checkpoint {path}")
    return TargetModel(model.to(device), layer_ids, masked_attention=masked_attention)


def checkpoint_fingerprint(path_or_id: str | Path) -> str:
    """Identity of a checkpoint directory: ``config.json`` and, per weight file, its name, size and a
    hash of its first and last MiB (the safetensors header names and shapes every tensor). A changed,
    replaced or truncated checkpoint gets a new fingerprint without reading gigabytes."""
    path = resolve_checkpoint(path_or_id)
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if (
            f.name == "config.json"
            or f.suffix in (".safetensors", ".bin", ".pt")
            or f.name == WEIGHTS_INDEX
        ):
            size = f.stat().st_size
            h.update(f"{f.name}\0{size}\0".encode())
            with f.open("rb") as fh:
                h.update(fh.read(1 << 20))
                if size > 2 << 20:
                    fh.seek(size - (1 << 20))
                    h.update(fh.read())
    return h.hexdigest()[:20]


def check_loading_info(info: dict, where: str) -> None:
    """transformers' loading report as an error: any missing (would be randomly initialised),
    unexpected or mis-shaped tensor, or load error message, names the tensors."""
    problems = []
    for key, what in (
        ("missing_keys", "missing tensor(s) (would be random)"),
        ("unexpected_keys", "unexpected tensor(s) (misnamed?)"),
        ("mismatched_keys", "mis-shaped tensor(s)"),
    ):
        names = sorted(str(k) for k in (info.get(key) or ()))
        if names:
            problems.append(f"{what}: {', '.join(names)}")
    if info.get("error_msgs"):
        problems.append("errors: " + "; ".join(map(str, info["error_msgs"])))
    if problems:
        raise ValueError(f"{where}: " + "; ".join(problems))


def check_pair(draft: DFlashConfig, target_config, where: str = "drafter/target pair") -> None:
    """The drafter must fit the target: same vocabulary and hidden size, ``target_layer_ids`` inside the
    target's layers and ``mask_token_id`` inside the vocabulary. Names every difference."""
    t_layers = int(target_config.num_hidden_layers)
    t_vocab = int(target_config.vocab_size)
    problems = []
    if draft.vocab_size != t_vocab:
        problems.append(f"drafter vocab_size {draft.vocab_size} != target vocab_size {t_vocab}")
    if draft.hidden_size != int(target_config.hidden_size):
        problems.append(
            f"drafter hidden_size {draft.hidden_size} != target hidden_size {target_config.hidden_size}"
        )
    bad = [i for i in draft.target_layer_ids if not 0 <= i < t_layers]
    if bad:
        problems.append(f"drafter target_layer_ids {bad} outside the target's {t_layers} layers")
    if not 0 <= draft.mask_token_id < t_vocab:
        problems.append(
            f"drafter mask_token_id {draft.mask_token_id} is outside the target vocabulary ({t_vocab})"
        )
    if problems:
        raise ValueError(f"{where}: " + "; ".join(problems))


def load_pair(
    target: str | Path,
    draft: str | Path,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    masked_attention: str = "math",
) -> tuple[TargetModel, DFlashDrafter]:
    """Target and drafter, with the target exposing the drafter's ``target_layer_ids``; checks they fit."""
    drafter = load_drafter(draft, device=device, dtype=dtype)
    tgt = load_target(
        target,
        device=device,
        dtype=dtype or drafter.fc.weight.dtype,
        layer_ids=drafter.config.target_layer_ids,
        masked_attention=masked_attention,
    )
    check_pair(drafter.config, tgt.model.config, f"drafter {draft} with target {target}")
    drafter.to(tgt.dtype)
    return tgt, drafter


__all__ = [
    "load_drafter",
    "save_drafter",
    "load_target",
    "load_pair",
    "check_drafter_tensors",
    "check_pair",
    "checkpoint_fingerprint",
    "check_loading_info",
    "resolve_checkpoint",
    "check_model_path",
    "check_model_paths",
    "expected_tensor_names",
]
