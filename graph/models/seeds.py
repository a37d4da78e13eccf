"""The sampling seed of each extra attempt an embedded model makes (a rewrite after review, a nudge
after an empty line).

With a seed configured, every attempt's seed derives from it and from what the attempt is, so a
seeded run repeats call for call, and each different attempt still samples afresh. Unseeded, each
attempt draws a random seed, as the first call does.
"""

from __future__ import annotations

import hashlib
import secrets

SEED_RANGE = 2**31  # llama.cpp takes a non-negative 32-bit seed; -1 would mean "random"


def attempt_seed(seed: int | None, attempt: str) -> int:
    """The seed for `attempt` (a text naming the attempt and its input) under the configured seed."""
    if seed is None:
        return secrets.randbelow(SEED_RANGE)
    digest = hashlib.sha256(f"{seed}\x00{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SEED_RANGE
