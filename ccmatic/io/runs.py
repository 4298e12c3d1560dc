"""Independent runs on an executor, their rows in task order, with a progress line
(shared by ``evaluate`` and ``contract``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from ccmatic.engine.parallel.executor import make_executor, map_unordered

T_ = TypeVar("T_")


def run_in_order(fn: Callable[[T_], dict[str, Any]], tasks: list[T_], jobs: int, executor: str,
                 address: str | None, err: TextIO | None) -> list[dict[str, Any]]:
    """``fn`` over ``tasks`` on the executor ``executor`` (``local`` or ``ray``, at
    ``address``) with ``jobs`` workers, with a progress line on ``err`` (None: quiet);
    the rows in task order."""
    ex = make_executor(executor, jobs, address)
    rows: dict[int, dict[str, Any]] = {}
    try:
        for n, (i, row) in enumerate(map_unordered(ex, fn, tasks), start=1):
            rows[i] = row
            if err is not None:
                report_progress(err, n, len(tasks))
    except BaseException:  # an interrupt: end the progress line before the report
        if rows and err is not None and len(rows) < len(tasks) and err.isatty():
            err.write("\n")
        raise
    finally:
        ex.close()
    return [rows[i] for i in range(len(tasks))]


def report_progress(err: TextIO, n: int, total: int) -> None:
    """``n/total runs``: rewritten in place on a terminal; elsewhere (a log) a line at
    every tenth of the grid and at its end."""
    if err.isatty():
        err.write(f"\r  {n}/{total} runs" + ("\n" if n == total else ""))
    elif n == total or (n * 10) // total != ((n - 1) * 10) // total:
        err.write(f"  {n}/{total} runs\n")
