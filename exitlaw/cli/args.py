"""Argument helpers shared by every command family (argparse types and small setters).

Building the parser loads no torch and no JAX: the handlers' library calls load on first use
(:mod:`.library`), and the setters here reach torch through :func:`_torch` and JAX in
:func:`enable_x64`, each imported at that one place.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from exitlaw.theory import DistributionError
from exitlaw.theory.sampling_settings import (
    FILTER_RECORDS,
    FILTERS,
    HF_ORDER,
    VLLM_ORDER,
    SamplingSettings,
    check_temperature_floor,
)


def int_list(text: str) -> list[int]:
    """``"32,64,128"`` -> ``[32, 64, 128]``; every entry a positive integer, at least one."""
    return _int_list(text, 1, "positive")


def nonneg_int_list(text: str) -> list[int]:
    """``"0,3"`` -> ``[0, 3]``; every entry an integer >= 0 (seeds, indices), at least one."""
    return _int_list(text, 0, "non-negative")


def _number_list(text: str, kind: type, noun: str) -> list:
    """Comma-separated ``kind`` values (empty entries skipped); an entry that is not one is an error."""
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {noun}, got {text!r}") from None


def _int_list(text: str, least: int, words: str) -> list[int]:
    out = _number_list(text, int, "integers")
    if not out or min(out) < least:
        raise argparse.ArgumentTypeError(f"expected comma-separated {words} integers, got {text!r}")
    return out


def float_list(text: str) -> list[float]:
    """``"0,1"`` -> ``[0.0, 1.0]``; at least one finite number."""
    out = _number_list(text, float, "numbers")
    if not out or not all(math.isfinite(x) for x in out):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    return out


def temperature_list(text: str) -> list[float]:
    """``"0,1"`` -> ``[0.0, 1.0]``; at least one temperature, each as :func:`temperature_value`."""
    out = float_list(text)
    if min(out) < 0:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated finite numbers >= 0, got {text!r}"
        )
    for t in out:
        _temperature_floor(t, True)
    return out


def name_list(text: str) -> list[str]:
    """``"predraw, tev"`` -> ``["predraw", "tev"]``; at least one name."""
    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return out


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
    return value


def vocab_size(text: str) -> int:
    """A vocabulary size: an integer ``>= 2``."""
    return _int_at_least(text, 2)


def positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def nonneg_int(text: str) -> int:
    return _int_at_least(text, 0)


def finite_float(text: str) -> float:
    """A finite number (``nan`` and ``inf`` are refused: they silently poison every result)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def nonneg_float(text: str) -> float:
    """A finite number ``>= 0`` (a rate, a margin; temperatures: :func:`temperature_value`)."""
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _temperature_floor(value: float, allow_zero: bool) -> None:
    try:
        check_temperature_floor(value, allow_zero=allow_zero)
    except DistributionError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def temperature_value(text: str) -> float:
    """A temperature: finite, ``0`` (greedy) or at least
    :data:`~exitlaw.theory.sampling_settings.MIN_TEMPERATURE`."""
    value = nonneg_float(text)
    _temperature_floor(value, True)
    return value


def positive_temperature(text: str) -> float:
    """A temperature ``> 0`` (one that is not greedy), at least ``MIN_TEMPERATURE``."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a temperature > 0, got {text!r}")
    _temperature_floor(value, False)
    return value


def filter_value(record) -> Callable[[str], Any]:
    """The argparse type of a sampling filter's flag: its record's type and range
    (:class:`~exitlaw.theory.sampling_settings.Filter`), ``expected ...`` on a bad value."""

    def parse(text: str):
        try:
            value = record.type(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {record.expected}, got {text!r}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or not record.valid(value):
            raise argparse.ArgumentTypeError(f"expected {record.expected}, got {text!r}")
        return value

    parse.__name__ = record.name
    return parse


def open_unit_float(text: str) -> float:
    """A number strictly between 0 and 1 (a false-failure rate, a power, a total variation)."""
    value = finite_float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a number strictly between 0 and 1, got {text!r}"
        )
    return value


def port_number(text: str) -> int:
    """A TCP port in ``0..65535`` (0: the system picks a free one)."""
    try:
        value = int(text)
    except ValueError:
        value = -1  # not an integer: refused below with the same message
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535, got {text!r}")
    return value


ORDERS = {"vllm": "min-p, top-k, top-p", "hf": "top-k, top-p, min-p"}  # --sampling-order choices


def add_sampling_args(
    parser: argparse.ArgumentParser, what: str = "every decoded token", with_order: bool = True
) -> None:
    """The sampling filters of every command, one spelling: ``--top-k``, ``--top-p``, ``--min-p`` and
    (``with_order``) ``--sampling-order`` (:class:`exitlaw.theory.SamplingSettings`; each value
    checked by argparse). The temperature is each command's own flag; :func:`sampling_settings_from`
    joins them into one ``SamplingSettings``."""
    for f in FILTER_RECORDS:  # one row per filter, from its record
        parser.add_argument(
            f.flag,
            dest=f.name,
            type=filter_value(f),
            default=None,
            metavar=f.metavar,
            help=f"{f.help} for {what} (default: off)",
        )
    if with_order:
        parser.add_argument(
            "--sampling-order",
            choices=tuple(ORDERS),
            default=None,
            help="filter order after the temperature: "
            + "; ".join(f"{k} = {v}" for k, v in ORDERS.items())
            + " (default vllm, vLLM's sampler; hf: transformers' warpers)",
        )


def sampling_given(args: argparse.Namespace) -> bool:
    """Whether any filter flag of :func:`add_sampling_args` was given."""
    return any(getattr(args, f, None) is not None for f in FILTERS)


def sampling_settings_from(args: argparse.Namespace, temperature: float = 1.0):
    """One :class:`~exitlaw.theory.SamplingSettings` from the flags of :func:`add_sampling_args` at
    ``temperature`` (the command's own temperature flag). Bad values raise the named
    ``DistributionError``."""
    order = HF_ORDER if getattr(args, "sampling_order", None) == "hf" else VLLM_ORDER
    return SamplingSettings(temperature, **{f: getattr(args, f) for f in FILTERS}, order=order)


def add_threads(
    parser: argparse.ArgumentParser, default: int | None = None, help_text: str | None = None
) -> None:
    """``--threads N``: torch intra-op CPU threads (validated as >= 1 by argparse); ``help_text`` replaces
    the default help (e.g. where the threads are those of other processes)."""
    if help_text is None:
        help_text = (
            "torch CPU threads (default: torch's choice; on a small shared CPU, 1 is often fastest)"
            if default is None
            else f"torch CPU threads (default {default}: small ops on a busy machine "
            "are far faster single-threaded)"
        )
    parser.add_argument("--threads", type=positive_int, default=default, help=help_text)


def _torch():
    """torch, for the setters below: the one place the command line imports it by name."""
    import torch  # lazy: the engine extra; `exitlaw --help` and the JAX-only commands load no torch

    return torch


def set_torch_threads(threads: int | None) -> None:
    """Apply ``--threads`` (``None`` leaves torch's choice)."""
    if threads is not None:
        _torch().set_num_threads(threads)


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Apply ``--threads`` for the block and restore torch's setting after it (a benchmark called in
    a process that goes on, such as the test suite)."""
    before = _torch().get_num_threads()
    try:
        set_torch_threads(threads)
        yield
    finally:
        _torch().set_num_threads(before)


def cuda_available() -> bool:
    """Whether this torch build sees a CUDA device (``--device`` defaults)."""
    return _torch().cuda.is_available()


def check_device(device: str | None) -> None:
    """``--device cuda...`` refused, before any model loads, where torch sees no CUDA device."""
    if device and device.startswith("cuda") and not cuda_available():
        raise ValueError(f"--device {device} requested but this torch build sees no CUDA device")


def enable_x64() -> None:
    """Exact-law commands compute in float64 (docs/architecture.md §1: x64 where exactness matters)."""
    import jax  # lazy: the theory extra; `exitlaw --help` and the engine's commands load no JAX

    jax.config.update("jax_enable_x64", True)


# ----- shared argument groups: pieces of a Command (exitlaw.cli.grammar) --------------------------------


def out_args(what: str, default: str | None = None, required: bool = False):
    """``--out DIR`` (a folder; ``what`` says what is written there) and ``--overwrite``."""

    def add(parser: argparse.ArgumentParser) -> None:
        if required or "(default" in what:  # ``what`` states its own default
            where = ""
        elif default is None:
            where = " (default: write nothing)"
        else:
            where = f" (default {default})"
        parser.add_argument(
            "--out",
            metavar="DIR",
            default=default,
            required=required,
            help=f"folder: {what}{where}",
        )
        parser.add_argument(
            "--overwrite", action="store_true", help="replace files a former run wrote in --out"
        )

    return add


def result_out_args(parser: argparse.ArgumentParser) -> None:
    """``--out DIR`` writing ``DIR/results.json``, ``--overwrite`` and ``--json`` (every benchmark)."""
    out_args("the results as results.json")(parser)
    json_arg(parser)


def json_arg(parser: argparse.ArgumentParser) -> None:
    """``--json``: print the JSON result on stdout instead of the text."""
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def seed_arg(default: int | None = 0, help: str | None = None):
    """``--seed N``."""
    text = help or (f"random seed (default {default})" if default is not None else "random seed")
    return lambda parser: parser.add_argument("--seed", type=int, default=default, help=text)


def model_pair_args(
    required: bool = True, draft_help: str = "DFlash drafter checkpoint directory or Hub id"
):
    """``--target`` and ``--draft`` (checkpoint directories or Hub ids)."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--target", required=required, help="target checkpoint directory or Hub id"
        )
        parser.add_argument("--draft", required=required, help=draft_help)

    return add


def prompt_set_arg(default: str | None = None, required: bool = False):
    """``--prompts``: a prompt set, as every command that decodes prompts from a set reads it
    (:func:`exitlaw.engine.prompts.records.load_prompt_set`: ``bench decoding``, ``bench batch``,
    ``train``)."""
    where = f" (default {default})" if default else ""
    text = (
        "a prompt set: gsm8k | humaneval | math500 | mt-bench (NAME=FILE.jsonl: a local copy of the "
        "set's rows) | jsonl:FILE | FILE.jsonl | hf:NAME[:SPLIT]; records: prompt_ids, turns, "
        f"conversations, messages, prompt/text/question/problem{where}"
    )
    return lambda parser: parser.add_argument(
        "--prompts", default=default, required=required, metavar="SET", help=text
    )


def num_prompts_arg(default: int | None = None):
    """``--num-prompts N``: use only the first N prompts."""
    where = "all" if default is None else str(default)
    return lambda parser: parser.add_argument(
        "--num-prompts",
        type=positive_int,
        default=default,
        metavar="N",
        help=f"use only the first N prompts (default {where})",
    )


def max_new_tokens_arg(default: int, what: str = "tokens decoded per prompt"):
    """``--max-new-tokens N``: how many tokens are decoded (``what`` says per what)."""
    return lambda parser: parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=default,
        metavar="N",
        help=f"{what} (default {default})",
    )


def device_args(
    default: str | None = None,
    dtypes=("auto", "float32", "bfloat16", "float16"),
    dtype_default="auto",
    help: str | None = None,
):
    """``--device`` (``None``: cuda if available) and ``--dtype``."""

    def add(parser: argparse.ArgumentParser) -> None:
        where = "cuda if available" if default is None else default
        text = help or f"cpu | cuda (default: {where})"
        parser.add_argument("--device", default=default, help=text)
        parser.add_argument(
            "--dtype",
            default=dtype_default,
            choices=list(dtypes),
            help=f"tensor dtype (default {dtype_default})",
        )

    return add


def masked_attention_arg(parser: argparse.ArgumentParser) -> None:
    """``--masked-attention``: the attention kernels of the target's masked forwards (tree, padded batch)."""
    parser.add_argument(
        "--masked-attention",
        choices=["math", "auto"],
        default="math",
        help="attention kernels of the target's masked forwards on CUDA: math (default; the other "
        "kernels broke T = 0 exactness on an H200 with torch 2.11) or auto (torch's choice); "
        "no effect on a CPU",
    )


def no_progress_arg(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: hide progress bars (they are drawn only on a terminal anyway)."""
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress bars (drawn only when stderr is a terminal)",
    )


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars only on a terminal: a log file gets the plain stage lines, not carriage returns.

    Without bars, the libraries' own bars (transformers' weight loading) are turned off too.
    """
    shown = not args.no_progress and sys.stderr.isatty()
    if not shown:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when transformers is imported
        if "transformers" in sys.modules:
            from transformers.utils import (  # lazy: the engine extra, only once a command loaded it
                logging as hf_logging,
            )

            hf_logging.disable_progress_bar()
    return shown
