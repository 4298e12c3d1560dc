"""Other processes, as the clean-up of a crashed run sees them."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it cannot be signalled,
    but it is there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
