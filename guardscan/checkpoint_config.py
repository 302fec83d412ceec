"""launch (the checkpoint's config.json): which ``--quantization`` method a launch without one gets from a local checkpoint.

A launch that gives no ``--quantization`` runs the method its checkpoint
names: SGLang reads ``quantization_config.quant_method`` from the model's
``config.json``. Without it, a verdict that one method's code decides is a
condition ("blocked with --quantization mxfp4", ``verdict.checkpoint``);
with a local ``--model-path`` whose ``config.json`` names the method,
``check`` and ``preflight`` judge under that method exactly, and say so, as
the scan and ``explain`` do with ``--model-config FILE``. Only the method is
read here; the model's other properties (its architectures, ``model_type``,
MLA attention) are ``model_facts``'s, read from the same file.

The file is read as JSON, never through transformers, and only from a local
directory: a hub id (``deepseek-ai/DeepSeek-V3``) is not fetched. Known limit:
SGLang may turn a checkpoint's method into a compatible one of its own
(``gptq`` into ``gptq_marlin`` where Marlin runs); the name is taken as
written, and a name that is no ``--quantization`` method of the scanned
release leaves the launch judged without one, with a note.

>>> import json, tempfile, pathlib
>>> model = pathlib.Path(tempfile.mkdtemp())
>>> _ = (model / "config.json").write_text(json.dumps(
...     {"architectures": ["GptOssForCausalLM"], "quantization_config": {"quant_method": "mxfp4"}}))
>>> read_checkpoint(str(model)).method
'mxfp4'
>>> read_checkpoint("openai/gpt-oss-120b") is None
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MODEL_FLAGS", "Checkpoint", "model_path", "read_checkpoint", "read_config"]

#: the launch flags that name the model (``--model`` is SGLang's alias)
MODEL_FLAGS = ("--model-path", "--model")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What a local checkpoint's ``config.json`` says of its quantization:
    ``method`` the ``quant_method`` it names (None: no quantization config,
    or a file that could not be read: ``problem`` says why)."""

    config: str
    method: str | None
    problem: str | None = None

    def note(self, judged: str | None, choices: Sequence[str] | None) -> str:
        """One line for the answer: what was read, and what was judged."""
        if self.problem is not None:
            return f"{self.config}: {self.problem}; judged without --quantization"
        if self.method is None:
            return (f"{self.config} has no quantization_config: an unquantized checkpoint, "
                    "judged without --quantization")
        if judged == self.method:
            return (f"judged with --quantization {self.method}, the quant_method of "
                    f"{self.config}")
        offered = f" (methods: {', '.join(choices)})" if choices else ""
        return (f"{self.config} names quant_method {self.method!r}, not a --quantization "
                f"method of this release{offered}; judged without --quantization")


def model_path(values: Sequence[tuple[str, str | None]]) -> str | None:
    """The model a launch names: the last ``--model-path`` or ``--model``
    value of ``values`` (each flag with its value, in the command's order)."""
    found = [value for flag, value in values if flag in MODEL_FLAGS and value]
    return found[-1] if found else None


def read_checkpoint(path: str | None) -> Checkpoint | None:
    """The quantization a local checkpoint directory's ``config.json`` names;
    None where ``path`` is no local directory holding one (a hub id)."""
    if not path:
        return None
    config = Path(path).expanduser() / "config.json"
    try:
        if not config.is_file():
            return None
    except OSError:
        return None
    return read_config(config)


def read_config(config: Path) -> Checkpoint:
    """The quantization a model's ``config.json`` (the file itself) names."""
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return Checkpoint(str(config), None, f"could not be read ({exc.__class__.__name__})")
    except json.JSONDecodeError as exc:
        return Checkpoint(str(config), None, f"is not JSON (line {exc.lineno})")
    if not isinstance(data, dict):
        return Checkpoint(str(config), None, "is not a JSON object")
    quant = data.get("quantization_config")
    if quant is None:
        return Checkpoint(str(config), None)
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if not isinstance(method, str) or not method.strip():
        return Checkpoint(str(config), None, "has a quantization_config without a quant_method")
    return Checkpoint(str(config), method.strip().lower())
