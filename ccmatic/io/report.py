"""Human-readable tables and JSON for results.  Numbers stay exact in JSON (rational
strings such as "7/3"); tables show decimals (floats only for display)."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ccmatic.core.model import MODEL_PARTS
from ccmatic.core.quantities import QUANTITIES
from ccmatic.core.results import (
    ANSWERS,
    ConcreteTrace,
    Counterexample,
    Proved,
    Unknown,
    Value,
    trace_to_json,
)
from ccmatic.engine.verify import VerifyReport, model_parts_note
from ccmatic.semantics.explain import SYMBOL, ObjectiveCheck, Violation
from ccmatic.spec.render import number

if TYPE_CHECKING:  # a type only: verify's start-up does not load the proof classes
    from ccmatic.core.proof import Lemma

#: the columns of a counterexample table, in the registry's order (the delay bounds
#: shown as one interval column, "qdel")
COLUMNS = [n for n, q in QUANTITIES.items() if q.column and n not in ("qdel_hi",)]


def fmt(x: Fraction | int | bool | None, width: int = 8) -> str:
    if x is None:
        return "-".rjust(width)
    if isinstance(x, bool):
        return ("yes" if x else "no").rjust(width)
    x = Fraction(x)
    s = str(x.numerator) if x.denominator == 1 else f"{float(x):.4g}"
    return s.rjust(width)


def _hi(x: Value) -> str:
    if isinstance(x, Fraction) and x >= 1000:
        return "inf"
    return fmt(x, 0).strip()


def _flow_columns(tr: ConcreteTrace, f: int, fl: dict[str, list[Value]]) -> list[tuple[str, list[str]]]:
    cols: list[tuple[str, list[str]]] = []
    for c in COLUMNS:
        q = QUANTITIES[c]
        if c == "qdel_lo":
            if c in fl:
                cols.append(("qdel", [f"[{fmt(lo, 0).strip()},{_hi(hi)})".rjust(10)
                                      for lo, hi in zip(fl["qdel_lo"], fl["qdel_hi"])]))
        elif c == "queue" and tr.N > 1:
            cols.append((c, [fmt(a - lo - s) for a, lo, s in zip(fl["A"], fl["L"], fl["S"])]))
        elif q.extract == "aggregate" and c in tr.aggregate:
            if f == 0 or q.per_flow:
                cols.append((c, [fmt(x) for x in tr.aggregate[c]]))
        elif c in fl:
            cols.append((c, [fmt(x) for x in fl[c]]))
    cols += [(name, [fmt(x) for x in vs]) for name, vs in fl.items() if name not in QUANTITIES]
    return cols


def trace_table(tr: ConcreteTrace) -> str:
    """Per-step table: the curves, queues, rate, cwnd, beliefs, delay range, state."""
    p = tr.params
    hdr = ", ".join(f"{k}={fmt(v, 0).strip()}" for k, v in p.items() if v is not None)
    lines = [f"  parameters: {hdr}" + ("" if p.get("buffer") is not None else ", buffer=infinite")]
    for f, fl in enumerate(tr.flows):
        if tr.N > 1:
            lines.append(f"  flow {f}:")
        cols = _flow_columns(tr, f, fl)
        widths = [max(len(h), max(len(v) for v in vals)) for h, vals in cols]
        lines.append("  " + "  t " + " ".join(h.rjust(w) for (h, _), w in zip(cols, widths)))
        for t in range(tr.T):
            lines.append("  " + f"{t:3d} " + " ".join(vals[t].rjust(w) for (_, vals), w in zip(cols, widths)))
    return "\n".join(lines)


def verify_text(rep: VerifyReport) -> str:
    qy = rep.query
    o = rep.outcome
    head = "\n".join([f"{qy.name}: cca {qy.scenario.cca_name} on {qy.model.summary()}, T={qy.T}",
                      *[f"  {line}" for line in model_parts_note(qy.scenario)]])
    if qy.exists:
        return f"{head}\n{exists_body(rep)}\n  time: encode {rep.encode_s:.2f}s, solve {rep.solve_s:.2f}s"
    if isinstance(o, Proved):
        body = f"PROVED for all traces of T={o.T} steps"
    elif isinstance(o, Counterexample):
        body = "\n".join(["COUNTEREXAMPLE (re-checked with exact rationals and replayed)",
                          *objectives_lines(rep.objectives), trace_table(o.trace)])
    else:
        assert isinstance(o, Unknown)
        body = f"UNKNOWN: {o.reason} (not proved)"
    return f"{head}\n{body}\n  time: encode {rep.encode_s:.2f}s, solve {rep.solve_s:.2f}s"


def exists_body(rep: VerifyReport) -> str:
    """An exists question's answer: a witness, or a proof that there is none."""
    o = rep.outcome
    if isinstance(o, Counterexample):
        return "WITNESS (re-checked with exact rationals and replayed)\n" + trace_table(o.trace)
    if isinstance(o, Proved):
        return f"NO WITNESS: proved that no trace of T={o.T} steps meets the exists conditions"
    assert isinstance(o, Unknown)
    return f"UNKNOWN: {o.reason} (neither a witness nor a proof that none exists)"


def question_json(rep: VerifyReport) -> dict[str, Any]:
    """What the query asked, and (exists) the verdict in the question's words."""
    qy = rep.query
    out: dict[str, Any] = {"question": qy.question, "model_parts": [p for p in MODEL_PARTS if p in qy.scenario.parts]}
    if qy.exists:
        out["answer"] = ANSWERS[rep.verdict]
    return out


def verify_json(rep: VerifyReport) -> dict[str, Any]:
    o = rep.outcome
    out: dict[str, Any] = {
        "query": rep.query.path, "verdict": rep.verdict, "T": rep.query.T,
        "time_s": round(rep.encode_s + rep.solve_s, 4), "encode_s": round(rep.encode_s, 4),
        "solve_s": round(rep.solve_s, 4), "n_constraints": rep.n_constraints,
    }
    out["objectives"] = [c.json() for c in rep.objectives]
    if isinstance(o, Counterexample):
        out["trace"] = trace_to_json(o.trace)
    if isinstance(o, Unknown):
        out["reason"] = o.reason
    if isinstance(o, Proved):  # how some trace was shown to exist (not vacuous)
        out["nonvacuity"] = {"by": o.trace_by, "s": round(o.trace_s, 4)}
    if rep.query.expect is not None:
        out["expect"] = rep.query.expect
    if rep.smt2 is not None:
        out["smt2"] = str(rep.smt2)
    out.update(question_json(rep))
    return out


# -- what a counterexample violates --------------------------------------------------------

#: characters of a formula shown on one line
FORMULA_CHARS = 160


def _short(text: str) -> str:
    return text if len(text) <= FORMULA_CHARS else text[:FORMULA_CHARS - 1] + "…"


def value_text(x: Value | None) -> str:
    """A value, short: exact when it is a short decimal (0.78), else 4 digits (as the tables)."""
    if x is None or isinstance(x, bool):
        return str(x)
    s = number(Fraction(x))
    return s if "/" not in s else f"{float(x):.4g}"


def objectives_lines(checks: list[ObjectiveCheck], indent: str = "  ") -> list[str]:
    """'violates: ...' with how, per violated objective, then 'holds: ...' per other."""
    lines: list[str] = []
    for c in sorted(checks, key=lambda c: c.holds is not False):
        if c.holds is False:
            lines.append(f"{indent}violates: {c.title}: {_short(c.formula)}")
            if c.why is not None:
                lines += violation_lines(c.why, indent + "  ")
        else:
            lines.append(f"{indent}holds: {c.title}")
    return lines


def lemma_lines(lemma: Lemma | None, why: Violation | None, indent: str = "  ") -> list[str]:
    """'violates lemma NAME: premise => conclusion' and how the conclusion fails."""
    if lemma is None:
        return []
    lines = [f"{indent}violates lemma {lemma.name}: {_short(lemma.premise.text)} => {_short(lemma.conclusion.text)}"]
    if why is not None:
        lines.append(f"{indent}  the premise holds; the conclusion fails:")
        lines += violation_lines(why, indent + "    ")
    return lines


def violation_lines(v: Violation, indent: str) -> list[str]:
    """How a formula fails, one line per comparison, nested as the formula is."""
    if v.cmp is not None:
        c = v.cmp
        left = c.lhs if c.lhs == value_text(c.lhs_value) else f"{c.lhs} = {value_text(c.lhs_value)}"
        right = c.rhs if c.rhs == value_text(c.rhs_value) else f"{c.rhs} = {value_text(c.rhs_value)}"
        return [f"{indent}{left} {c.actual} {right} (required {SYMBOL[c.required]}, margin {value_text(c.margin)})"]
    if v.kind == "fact":
        return [f"{indent}{v.text} is {v.value} (required {not v.value})"]
    at = "" if v.step is None else f" at step {v.step}"
    if v.kind == "implies":
        head = [f"{indent}{_short(v.text)} holds, so{at}:"]
    elif v.kind == "all":
        first = "" if v.step is None else f", the first at step {v.step}"
        head = [f"{indent}{v.count} of {v.total} conditions fail{first}:"]
    else:
        head = [f"{indent}none of the {v.total} alternatives holds{at}:"]
    lines = head
    for p in v.parts:
        if p.kind in ("all", "any") and v.kind != "implies":
            lines.append(f"{indent}  {_short(p.text)}:")
            lines += violation_lines(p, indent + "    ")
        else:
            lines += violation_lines(p, indent + "  ")
    if v.kind in ("all", "any") and (n := (v.count if v.kind == "all" else v.total) - len(v.parts)) > 0:
        lines.append(f"{indent}  ... and {n} more")
    return lines
