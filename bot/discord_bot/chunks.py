"""Discord's 2,000-character message limit: long text becomes several messages, cut at line breaks."""

from __future__ import annotations

MESSAGE_LIMIT = 2000


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Pieces of at most `limit` characters, cut at line breaks, else at a space, else anywhere."""
    chunks: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        for piece in _cut_long_line(line, limit):
            if len(current) + len(piece) > limit:
                chunks.append(current)
                current = ""
            current += piece
    chunks.append(current)
    return [chunk.lstrip("\n").rstrip() for chunk in chunks if chunk.strip()]


def _cut_long_line(line: str, limit: int) -> list[str]:
    pieces: list[str] = []
    while len(line) > limit:
        cut = line.rfind(" ", 0, limit) + 1 or limit
        pieces.append(line[:cut])
        line = line[cut:]
    pieces.append(line)
    return pieces
