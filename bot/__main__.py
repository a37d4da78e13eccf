"""`python -m bot`.

For -m, Python puts the working directory first on sys.path. A deployment's folder holds its own
personas/ (TOML files only), which would then hide our `personas` package ("cannot import name
'Persona' from 'personas'"). So unless the working directory is this source tree itself, it is
taken off the path before anything else is imported; `roundtable` never has it there.
"""

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path.cwd().resolve() != Path(__file__).resolve().parents[1]:
    del sys.path[0]

from bot.cli import main  # noqa: E402  # after the path is settled

sys.exit(main())
