"""Other processes, as the clean-up of a crashed run sees them."""

from __future__ import annotations

import os
import re
import tempfile


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


def dead_runs_folders(prefix: str, sep: str) -> list[str]:
    """The folders in the temp directory named ``<prefix><pid><sep>…`` whose process
    is gone (a crashed or killed run's; never this process's)."""
    base, name = tempfile.gettempdir(), re.compile(rf"^{re.escape(prefix)}(\d+){re.escape(sep)}")
    return [os.path.join(base, d) for d in sorted(os.listdir(base))
            if (m := name.match(d)) and int(m.group(1)) != os.getpid() and not alive(int(m.group(1)))]
