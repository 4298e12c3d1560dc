"""The transition graph of a proof (thesis §4.1.2, Fig. 4.3 and B.2).  A proof has a
handful of states, so a depth-first search does (importing a graph library took a
tenth of the Copa proof's time).

Nodes are the states; ``X → Y`` for every Y in X's ``to``; a self-loop on X when X
declares a ``loop`` (or X is the steady state).  The proof stitches only if

* the graph without self-loops is acyclic (no state can be left and re-entered,
  so progress made in one period is never undone),
* the steady state has no edge to another state (once there, it stays),
* every state other than the steady one has an edge out and reaches the steady
  state (so every path ends there),
* every self-loop outside the steady state carries a progress term (at least one
  measure improves ∧ none degrades).  A loop that may instead meet the steady-state
  objectives is reported: on such a path the objectives already hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ccmatic.core.proof import Proof


@dataclass
class GraphReport:
    ok: bool
    edges: list[tuple[str, str, list[str]]]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def json(self) -> dict[str, Any]:
        return {
            "verdict": "proved" if self.ok else "counterexample",
            "edges": [{"from": a, "to": b, "by": by} for a, b, by in self.edges],
            "problems": self.problems,
            "notes": self.notes,
        }


def find_cycle(succ: dict[str, list[str]]) -> list[str] | None:
    """A cycle of the graph (its nodes in order, the first not repeated), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(x: str) -> list[str] | None:
        state[x] = 1
        path.append(x)
        for y in succ[x]:
            if state.get(y) == 1:
                return path[path.index(y):]
            if y not in state and (found := visit(y)) is not None:
                return found
        path.pop()
        state[x] = 2
        return None

    for x in succ:
        if x not in state and (found := visit(x)) is not None:
            return found
    return None


def reaches(succ: dict[str, list[str]], x: str, target: str) -> bool:
    seen, todo = {x}, [x]
    while todo:
        y = todo.pop()
        if y == target:
            return True
        new = [z for z in succ[y] if z not in seen]
        seen.update(new)
        todo += new
    return False


def check_graph(proof: Proof) -> GraphReport:
    succ: dict[str, list[str]] = {x: [] for x in proof.states}  # without self-loops
    edges: list[tuple[str, str, list[str]]] = []
    problems: list[str] = []
    notes: list[str] = []
    steady = proof.steady
    for x, t in proof.transitions.items():
        for y in t.to:
            succ.setdefault(y, [])
            if y != x and y not in succ.setdefault(x, []):
                succ[x].append(y)
            edges.append((x, y, list(t.by)))
        if t.loop or x == steady:
            edges.append((x, x, list(t.by)))
    cycle = find_cycle(succ)
    if cycle is not None:
        problems.append(f"cycle outside the steady state's self-loop: {' -> '.join([*cycle, cycle[0]])}")
    if succ[steady]:
        problems.append(f"the steady state '{steady}' has edges to other states "
                        f"({', '.join(sorted(succ[steady]))}): it must stay steady")
    for x in proof.states:
        if x == steady:
            continue
        if not succ[x]:
            problems.append(f"state '{x}' has no edge out: it never reaches the steady state '{steady}'")
        elif not reaches(succ, x, steady):
            problems.append(f"state '{x}' cannot reach the steady state '{steady}'")
        loop = proof.transitions[x].loop
        if loop:
            progress = [p for p in loop if p in proof.progress]
            if not progress:
                problems.append(f"the self-loop on '{x}' has no progress term "
                                "(at least one improves ∧ none degrades)")
            elif proof.objectives is not None and proof.objectives in loop:
                notes.append(f"'{x}' may also stay in place while meeting '{proof.objectives}' "
                             "(the steady-state objectives already hold on such periods)")
    return GraphReport(not problems, edges, problems, notes)
