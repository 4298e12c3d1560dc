"""Human-readable tables and JSON for results.  Numbers stay exact in JSON (rational
strings such as "7/3"); tables show decimals (floats only for display)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ccmatic.loader import model_summary
from ccmatic.verify import ConcreteTrace, Counterexample, Proved, Unknown, VerifyReport


def q(x: Fraction | bool | None) -> str | bool | None:
    """Exact JSON form of a value."""
    if x is None or isinstance(x, bool):
        return x
    return str(x)


def fmt(x: Fraction | int | bool | None, width: int = 8) -> str:
    if x is None:
        return "-".rjust(width)
    if isinstance(x, bool):
        return ("yes" if x else "no").rjust(width)
    if x.denominator == 1:
        s = str(x.numerator)
    else:
        s = f"{float(x):.4g}"
    return s.rjust(width)


def trace_json(tr: ConcreteTrace) -> dict[str, Any]:
    return {
        "T": tr.T,
        "N": tr.N,
        "params": {k: q(v) for k, v in tr.params.items()},
        "aggregate": {k: [q(x) for x in v] for k, v in tr.aggregate.items()},
        "flows": [{k: [q(x) for x in v] for k, v in fl.items()} for fl in tr.flows],
    }


COLUMNS = ["A", "S", "L", "Ld", "W", "queue", "bq", "rate", "cwnd", "c_lo", "c_hi", "qdel", "c_lo_lambda", "q_hi", "timeout"]


def trace_table(tr: ConcreteTrace) -> str:
    """Per-step table: A, S, L, W, queue, rate, cwnd, beliefs, qdel range."""
    lines = []
    p = tr.params
    hdr = ", ".join(f"{k}={fmt(v, 0).strip()}" for k, v in p.items() if v is not None)
    lines.append(f"  parameters: {hdr}" + ("" if p.get("buffer") is not None else ", buffer=infinite"))
    for f, fl in enumerate(tr.flows):
        if tr.N > 1:
            lines.append(f"  flow {f}:")
        cols: list[tuple[str, list[str]]] = []
        for c in COLUMNS:
            if c in ("W", "bq"):
                if f == 0:
                    cols.append((c, [fmt(x) for x in tr.aggregate[c]]))
                continue
            if c == "queue":
                cols.append((c, [fmt(x) for x in (tr.aggregate["queue"] if tr.N == 1 else
                                                  [a - l - s for a, l, s in zip(fl["A"], fl["L"], fl["S"])])]))
                continue
            if c == "qdel":
                if "qdel_lo" in fl:
                    cols.append(("qdel", [f"[{fmt(lo, 0).strip()},{_hi(hi)})".rjust(10)
                                          for lo, hi in zip(fl["qdel_lo"], fl["qdel_hi"])]))
                continue
            if c in fl:
                cols.append((c, [fmt(x) for x in fl[c]]))
        known = set(COLUMNS) | {"qdel_lo", "qdel_hi"}
        for name, vs in fl.items():
            if name not in known:
                cols.append((name, [fmt(x) for x in vs]))
        widths = [max(len(h), max(len(v) for v in vals)) for h, vals in cols]
        lines.append("  " + "  t " + " ".join(h.rjust(w) for (h, _), w in zip(cols, widths)))
        for t in range(tr.T):
            lines.append("  " + f"{t:3d} " + " ".join(vals[t].rjust(w) for (_, vals), w in zip(cols, widths)))
    return "\n".join(lines)


def _hi(x: Fraction | bool) -> str:
    if isinstance(x, Fraction) and x >= 1000:
        return "inf"
    return fmt(x, 0).strip()


def verify_text(rep: VerifyReport) -> str:
    qy = rep.query
    o = rep.outcome
    head = f"{qy.name}: cca {qy.cca_path.split('/')[-1]} on {model_summary(qy.model)}, T={qy.T}"
    if isinstance(o, Proved):
        body = f"PROVED for all traces of T={o.T} steps"
    elif isinstance(o, Counterexample):
        body = "COUNTEREXAMPLE (re-checked with exact rationals and replayed)\n" + trace_table(o.trace)
    else:
        assert isinstance(o, Unknown)
        body = f"UNKNOWN: {o.reason} (not proved)"
    return f"{head}\n{body}\n  time: encode {rep.encode_s:.2f}s, solve {rep.solve_s:.2f}s"


def verify_json(rep: VerifyReport) -> dict[str, Any]:
    o = rep.outcome
    out: dict[str, Any] = {
        "query": rep.query.path,
        "result": rep.result,
        "T": rep.query.T,
        "time_s": round(rep.encode_s + rep.solve_s, 4),
        "encode_s": round(rep.encode_s, 4),
        "solve_s": round(rep.solve_s, 4),
    }
    if isinstance(o, Counterexample):
        out["trace"] = trace_json(o.trace)
    if isinstance(o, Unknown):
        out["reason"] = o.reason
    if rep.query.expect is not None:
        out["expect"] = rep.query.expect
    return out
