"""Compare a ``ccmatic synth`` run of a Table 4.1 row with the thesis prototype's
published run of the same row, class by class (issue 26, item 4).

    python benchmarks/prototype_classes.py --log PROTOTYPE_LOG --ours RUN.json [--json OUT]

``PROTOTYPE_LOG`` is the prototype's own output of the row (public repository
github.com/108anup/ccmatic, ``outputs/nsdi24-fall/ccac-dynamic_buffer-T=9-
no_large_loss_when_buffer_large-4expr_balanced.txt``: 691 iterations, 6 solutions,
46,582 s, Table 4.1's figures).  ``RUN.json`` is ``ccmatic synth
queries/table4_1/G7-arbitrary.toml --json`` (or a variant of the row).  Nothing of the
prototype is imported: its log is read as text.

The G5 rows' runs are ``outputs/nsdi24-fall/ideal/ideal-{inf_buffer,small_fixed_buffer,
dynamic_buffer}-T=3-2expr-D=0*.txt`` in the same repository; G6's is
``outputs/nsdi24-fall/cbrdelay/cbrdelay-dynamic_buffer-T=7-2expr-no_large_loss_ever-
with-bq2-in-condexpr.txt`` (20 solutions, 19,332 s), against ``ccmatic synth
queries/table4_1/G6-prototype.toml --json``.

The prototype prints each candidate and each proved solution in the shape of
``templates/tpl_ccac_4expr_nested.cca`` (three conditions, four leaves),
``templates/tpl_ccac_2expr.cca`` (one condition, two leaves) or, on CBR-delay,
``templates/tpl_cbr_prototype.cca``; ``min_c`` is c_lo, ``max_c`` c_hi, ``min_qdel``
qdel_lo, ``alpha`` MSS/R, ``min_c_lambda`` c_lo_lambda, ``bq_belief`` q_hi, and an
empty leaf is rate 0.  A *class* is the coefficients on the terms that vary (c_lo,
c_hi, qdel_lo, q_hi in the conditions; c_lo, or c_lo_lambda and q_hi, in the leaves):
§4.2.1's rule, which both tools block with a solution.  For each
of ccmatic's solutions the script prints whether its class is one of the prototype's
solutions, how many of the prototype's candidates fell in the class (each refuted by a
counterexample, or the solution), and the iteration at which the prototype proposed
exactly this hole vector, if it did.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from fractions import Fraction
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TERM = re.compile(r"(-?[0-9]+(?:/[0-9]+)?)(min_c_lambda|min_c|max_c|min_qdel|bq_belief|alpha|R)\b")
#: condition terms -> hole numbers (templates/tpl_ccac_*.cca; tpl_cbr_prototype.cca adds bq_belief as a6)
COND_TERMS = {"min_c": 1, "max_c": 2, "min_qdel": 3, "R": 4, "alpha": 5, "bq_belief": 6}
VARYING = ("min_c", "max_c", "min_qdel", "bq_belief")
CONDITIONS = {1: "a", 3: "acd"}  # the templates: number of conditions -> their hole prefixes

Holes = dict[str, Fraction]


def linear(text: str) -> dict[str, Fraction]:
    """'+ -3/2min_c + 1max_c' -> {'min_c': -3/2, 'max_c': 1}."""
    return {var: Fraction(coef) for coef, var in TERM.findall(text.replace(" ", ""))}


def to_holes(lines: list[str], cbr: bool = False) -> Holes:
    """The lines after 'r_f = max alpha,' (1 condition and 2 leaves, or 3 and 4) as
    template holes; ``cbr``: the CBR-delay template (leaves over min_c_lambda and
    bq_belief, a condition over bq_belief as well)."""
    conds = [linear(t[t.index("(") + 1:t.rindex(">")]) for t in (s.strip() for s in lines) if t.startswith("if (")]
    leaves = [linear(t) for t in (s.strip() for s in lines) if not t.startswith(("if (", "else:"))]
    if len(conds) not in CONDITIONS or len(leaves) != len(conds) + 1:
        raise ValueError(f"neither the 2-expression nor the nested 4-expression template: "
                         f"{len(conds)} conditions, {len(leaves)} leaves")
    h: Holes = {}
    for p, cond in zip(CONDITIONS[len(conds)], conds):
        for term, k in COND_TERMS.items():
            if cbr or term != "bq_belief":
                h[f"{p}{k}"] = cond.get(term, Fraction(0))
    for n, leaf in enumerate(leaves):
        h[f"b{n}"] = leaf.get("min_c_lambda" if cbr else "min_c", Fraction(0))
        if cbr:
            h[f"q{n}"] = leaf.get("bq_belief", Fraction(0))
        h[f"k{n}"] = leaf.get("alpha", Fraction(0))
    return h


def read_log(path: Path) -> list[tuple[int, str, Holes]]:
    """(iteration, 'candidate' | 'solution', holes) for every CCA the log prints."""
    text = ANSI.sub("", path.read_text()).splitlines()
    cbr = any("min_c_lambda" in line for line in text)
    out: list[tuple[int, str, Holes]] = []
    iteration, i = 0, 0
    while i < len(text):
        m = re.search(r"Iteration: (\d+)", text[i])
        if m:
            iteration = int(m.group(1))
        kind = ("candidate" if text[i].endswith("Candidate solution: ")
                else "solution" if text[i].endswith("Proved solution: ") else None)
        if kind is None or not text[i + 1].startswith("r_f = max alpha"):
            i += 1
            continue
        j = i + 2
        while j < len(text) and not text[j].startswith("["):
            j += 1
        out.append((iteration, kind, to_holes(text[i + 2:j], cbr)))
        i = j
    return out


def class_of(h: Holes) -> tuple[Fraction, ...]:
    """The coefficients of the varying terms, in a fixed order for either template."""
    varying = [k for term, k in COND_TERMS.items() if term in VARYING]
    conds = [f"{p}{k}" for p in CONDITIONS[3] for k in varying if f"{p}{k}" in h]
    return tuple(h[k] for k in conds + sorted(k for k in h if k.startswith(("b", "q"))))


def describe(h: Holes) -> str:
    """The CCA in the template's words, e.g. '[-3/2c_lo+c_hi] ? ([qdel_lo] ? c_lo : 2c_lo) : (...)'."""
    names = ("c_lo", "c_hi", "qdel_lo", "R", "MSS/R", "q_hi/R")
    base = "c_lo_lambda" if "q0" in h else "c_lo"

    def cond(p: str) -> str:
        terms = [f"{h[f'{p}{k}']}{n}" for k, n in enumerate(names, 1) if h.get(f"{p}{k}", 0) != 0]
        return "+".join(terms).replace("+-", "-") or "0"

    def leaf(n: int) -> str:
        b, q, k = h[f"b{n}"], h.get(f"q{n}", Fraction(0)), h[f"k{n}"]
        terms = (f"{b}{base}" if b else "", f"{q}q_hi/R" if q else "", f"{k}MSS/R" if k else "")
        return "+".join(t for t in terms if t).replace("+-", "-") or "0"

    if "c1" not in h:
        return f"[{cond('a')}] ? {leaf(0)} : {leaf(1)}"
    return f"[{cond('a')}] ? ([{cond('c')}] ? {leaf(0)} : {leaf(1)}) : ([{cond('d')}] ? {leaf(2)} : {leaf(3)})"


def compare(log: list[tuple[int, str, Holes]], ours: list[Holes]) -> list[dict[str, object]]:
    proto_solutions = {class_of(h) for _, kind, h in log if kind == "solution"}
    exact = {tuple(sorted(h.items())): it for it, kind, h in log if kind == "candidate"}
    rows: list[dict[str, object]] = []
    for h in ours:
        k = class_of(h)
        rows.append({
            "cca": describe(h),
            "prototype_solution_class": k in proto_solutions,
            "prototype_candidates_in_class": sum(1 for _, kind, g in log if kind == "candidate" and class_of(g) == k),
            "prototype_proposed_exactly_at": exact.get(tuple(sorted(h.items()))),
            "holes": {name: str(v) for name, v in h.items()},
        })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, required=True, help="the prototype's published output of the row")
    ap.add_argument("--ours", type=Path, required=True, help="ccmatic synth --json output of the row")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    try:
        log = read_log(args.log)
        run = json.loads(args.ours.read_text())
        ours = [{k: Fraction(v) for k, v in h.items()} for h in run["holes"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = f"no {e} in {args.ours}" if isinstance(e, KeyError) else str(e)
        print(f"prototype_classes.py: error: {what} (hint: --log is the prototype's run output, "
              "--ours a 'ccmatic synth --json' output of the same row)", file=sys.stderr)
        sys.exit(2)
    rows = compare(log, ours)
    n_cand = sum(1 for _, kind, _ in log if kind == "candidate")
    n_sol = sum(1 for _, kind, _ in log if kind == "solution")
    print(f"prototype: {n_cand} candidates, {n_sol} solutions; ccmatic: {len(ours)} solutions ({run.get('status')})")
    print("| # | ccmatic's solution (least member of its class) | a prototype solution's class | prototype candidates in the class |")
    print("|---|---|---|---|")
    for i, r in enumerate(rows):
        print(f"| {i} | `{r['cca']}` | {'yes' if r['prototype_solution_class'] else 'no'} | {r['prototype_candidates_in_class']} |")
    shared = sum(1 for r in rows if r["prototype_solution_class"])
    theirs = {class_of(h) for _, kind, h in log if kind == "solution"}
    missing = len(theirs - {class_of(h) for h in ours})
    print(f"{shared} of ccmatic's {len(rows)} classes are prototype solutions' classes; "
          f"{sum(1 for r in rows if r['prototype_candidates_in_class'] == 0)} were never proposed by the prototype; "
          f"{missing} of the prototype's {len(theirs)} solution classes are not among ccmatic's")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
