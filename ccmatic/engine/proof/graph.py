"""The transition graph of a proof (thesis §4.1.2, Fig. 4.3 and B.2), checked with
networkx.

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


def check_graph(proof: Proof) -> GraphReport:
    import networkx as nx  # large, and only prove needs it

    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(proof.states)
    edges: list[tuple[str, str, list[str]]] = []
    problems: list[str] = []
    notes: list[str] = []
    steady = proof.steady
    for x, t in proof.transitions.items():
        for y in t.to:
            g.add_edge(x, y)
            edges.append((x, y, list(t.by)))
        if t.loop or x == steady:
            g.add_edge(x, x)
            edges.append((x, x, list(t.by)))
    dag = g.copy()
    dag.remove_edges_from(list(nx.selfloop_edges(dag)))
    if not nx.is_directed_acyclic_graph(dag):
        cyc = nx.find_cycle(dag)
        path = " -> ".join([a for a, _b in cyc] + [cyc[0][0]])
        problems.append(f"cycle outside the steady state's self-loop: {path}")
    if dag.out_degree(steady) > 0:
        problems.append(f"the steady state '{steady}' has edges to other states "
                        f"({', '.join(sorted(dag.successors(steady)))}): it must stay steady")
    for x in proof.states:
        if x == steady:
            continue
        if dag.out_degree(x) == 0:
            problems.append(f"state '{x}' has no edge out: it never reaches the steady state '{steady}'")
        elif not nx.has_path(g, x, steady):
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
