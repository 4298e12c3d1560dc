"""Counterexample-guided inductive synthesis over belief templates (thesis §4.1, B.1).

* **Generator**: one incremental solver over the hole variables, built once: each
  hole ranges over its finite domain, the template's unit checks exclude ill-typed
  candidates, and every counterexample adds the Eq. B.1.4 pruning — the next
  candidate must not make the same choices (rate, cwnd, state) at every step of that
  trace.  Solutions are blocked together with their constant-term variants (§4.2.1).
* **Verifier**: network ∧ assumptions ∧ ¬property is asserted once per query; each
  candidate's CCA constraints are checked in a pushed scope and popped.
* A candidate the verifier proves is re-verified from scratch in a fresh solver
  before it counts as a solution; an ``unknown`` answer never makes a solution.
"""

from __future__ import annotations

import ast
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import z3

from ccmatic.config import Query, RunOptions
from ccmatic.errors import Loc, SpecError
from ccmatic.lang.cca import CcaProgram, load_cca, step_outputs_on_values, trace_series
from ccmatic.lang.expr import Val, rat
from ccmatic.lang.source import HOLE_PREFIX
from ccmatic.lang.template_units import hole_var, unit_constraints
from ccmatic.recheck import Evaluator, FormulaCache, RecheckError, recheck
from ccmatic.smt import Encoding, Proved, Sat, Session, Unknown, make_solver
from ccmatic.verify import Problem, build, solve
from ccmatic.verify import Proved as VProved

Candidate = dict[str, Fraction]


@dataclass
class SynthOptions:
    timeout_s: float | None = None  # whole run
    check_timeout_s: float | None = 300.0  # one verifier check
    seed: int = 0
    record_counterexamples: bool = True  # keep their observations (needed for checkpoints)


@dataclass
class SynthStats:
    iterations: int = 0
    counterexamples: int = 0
    ill_typed: int = 0
    unknown: int = 0
    generator_s: float = 0.0
    verifier_s: float = 0.0
    encode_s: float = 0.0
    reverify_s: float = 0.0


@dataclass
class Solution:
    holes: Candidate
    text: str


@dataclass
class SynthResult:
    status: str  # complete | interrupted | timeout
    solutions: list[Solution]
    stats: SynthStats
    unknown_candidates: list[Candidate] = field(default_factory=list)
    time_s: float = 0.0


def hole_domains(prog: CcaProgram, query: Query) -> dict[str, tuple[Fraction, ...]]:
    doms: dict[str, tuple[Fraction, ...]] = {}
    for name, decl in prog.holes.items():
        dom = query.holes.get(name, decl.domain)
        if dom is None:
            raise SpecError(decl.loc, f"hole '?{name}' has no domain",
                            "declare it in the template (?name = {...}) or in the query's [holes] table")
        doms[name] = tuple(dom)
    extra = set(query.holes) - set(prog.holes)
    if extra:
        raise SpecError(Loc(query.path), f"[holes] names holes the template does not have: {', '.join(sorted(extra))}")
    return doms


def variable_term_holes(prog: CcaProgram) -> list[str]:
    """Holes that weight a trace-dependent term (a belief, an observation, ...).
    Holes weighting only constants (MSS/R, R) are 'constant-term' holes: a solution
    blocks all candidates that differ from it only there (§4.2.1)."""
    const_names = {"MSS", "R", "D", "T"}
    out: list[str] = []

    def trace_dependent(node: ast.AST) -> bool:
        for n in ast.walk(node):
            if isinstance(n, (ast.Name,)) and not n.id.startswith(HOLE_PREFIX) and n.id not in const_names:
                return True
            if isinstance(n, ast.Subscript):
                return True
        return False

    for st in prog.body:
        for node in ast.walk(st):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(side, ast.Name) and side.id.startswith(HOLE_PREFIX) and trace_dependent(other):
                        h = side.id[len(HOLE_PREFIX):]
                        if h not in out:
                            out.append(h)
    return out


def _fmt_frac(v: Fraction) -> ast.expr:
    if v < 0:
        return ast.UnaryOp(ast.USub(), _fmt_frac(-v))
    if v.denominator == 1:
        return ast.Constant(v.numerator)
    return ast.BinOp(ast.Constant(v.numerator), ast.Div(), ast.Constant(v.denominator))


class _Fill(ast.NodeTransformer):
    """Replace holes by values and drop zero terms: 0 * x -> 0, x + 0 -> x, 1 * x -> x."""

    def __init__(self, values: Candidate) -> None:
        self.values = values

    @staticmethod
    def _val(n: ast.AST) -> Fraction | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return Fraction(repr(n.value)) if isinstance(n.value, float) else Fraction(n.value)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = _Fill._val(n.operand)
            return -v if v is not None else None
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            a, b = _Fill._val(n.left), _Fill._val(n.right)
            if a is not None and b:
                return a / b
        return None

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith(HOLE_PREFIX):
            return _fmt_frac(self.values[node.id[len(HOLE_PREFIX):]])
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        lv, rv = self._val(node.left), self._val(node.right)
        if isinstance(node.op, ast.Mult):
            if lv == 0 or rv == 0:
                return ast.Constant(0)
            if lv == 1:
                return node.right
            if rv == 1:
                return node.left
            if lv == -1:
                return ast.UnaryOp(ast.USub(), node.right)
        if isinstance(node.op, ast.Div) and lv == 0:
            return ast.Constant(0)
        if isinstance(node.op, ast.Add):
            if lv == 0:
                return node.right
            if rv == 0:
                return node.left
            neg = _negated(node.right)
            if neg is not None:
                return ast.BinOp(node.left, ast.Sub(), neg)
        if isinstance(node.op, ast.Sub):
            if rv == 0:
                return node.left
            if lv == 0:
                return ast.UnaryOp(ast.USub(), node.right)
        return node


def _negated(n: ast.AST) -> ast.expr | None:
    """For a term written with a leading minus (-x, -2 * x, -x / R), the term without it."""
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        return n.operand
    if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.Div)):
        inner = _negated(n.left)
        if inner is not None:
            return ast.BinOp(inner, n.op, n.right)
    return None


def fill_template(prog: CcaProgram, values: Candidate, header: str) -> str:
    """A concrete CCA file (valid input of ``ccmatic verify``) for a candidate."""
    body = [_Fill(values).visit(ast.parse(ast.unparse(st))) for st in prog.body]
    lines = [f"# {line}" for line in header.splitlines()]
    for s in prog.states:
        lines.append(ast.unparse(s.node))
    for mod in body:
        lines.append(ast.unparse(ast.fix_missing_locations(mod)))
    return "\n".join(lines) + "\n"


def _min_opt(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


class Synthesizer:
    def __init__(self, query: Query, opts: SynthOptions, prog: CcaProgram | None = None) -> None:
        t0 = time.perf_counter()
        self.query = query
        self.opts = opts
        self.prog = prog if prog is not None else load_cca(query.cca_path)
        if not self.prog.is_template:
            raise SpecError(Loc(query.cca_path, 1, 1), "the CCA has no holes: nothing to synthesize",
                            "use 'ccmatic verify' for a concrete CCA")
        self.domains = hole_domains(self.prog, query)
        self.warmup = self.prog.warmup(query.model.R, query.model.D, query.T)
        self.hvars = {h: hole_var(h) for h in self.domains}
        # verifier base: built once, with the template's reads (beliefs) created here
        self.sym_cca = Encoding()  # the CCA's constraints with symbolic holes
        symbolic = {h: Val(v, False, None, None, True) for h, v in self.hvars.items()}
        self.problem: Problem = build(query, self.prog, holes=symbolic, cca_enc=self.sym_cca)  # type: ignore[arg-type]
        self.tr = self.problem.trace
        self.base = self.problem.base
        self.verifier = Session(self.base, opts.check_timeout_s, opts.seed, self.tr.logic)
        self.neg_prop = z3.Not(self.problem.prop)
        self.verifier.solver.add(self.neg_prop)
        self.fcache = FormulaCache()
        self.output_defs = self._output_definitions()
        self._fresh: Problem | None = None  # separately built base for re-verification
        # generator
        self.gen = make_solver(None, opts.seed, "QF_LRA")
        for h, dom in self.domains.items():
            self.gen.add(z3.Or(*[self.hvars[h] == rat(v) for v in dom]))
        for c in unit_constraints(self.prog):
            self.gen.add(c)
        self.var_holes = [h for h in variable_term_holes(self.prog) if h in self.domains]
        self.stats = SynthStats()
        self.solutions: list[Solution] = []
        self.unknown: list[Candidate] = []
        self.cex_log: list[dict[str, object]] = []  # for checkpoints
        self._seen: set[tuple[tuple[str, Fraction], ...]] = set()
        self._assume: list[z3.BoolRef] = []  # the current cube's guard (parallel synthesis)
        self._cubes = 0
        self.stats.encode_s = time.perf_counter() - t0

    # -- cubes (parallel synthesis) -----------------------------------------------------
    def restrict(self, cube: dict[str, tuple[Fraction, ...]], solutions: list[Candidate],
                 unknown: list[Candidate]) -> None:
        """Search only ``cube`` (a subset of each listed hole's domain) until
        :meth:`unrestrict`, with the given solutions and unknown candidates blocked.
        The cube is a guarded constraint checked under an assumption, so everything
        the run learns (pruning by counterexamples, blocked solutions) stays in the
        generator for the next cube: it is valid everywhere."""
        self._cubes += 1
        lit = z3.Bool(f"cube!{self._cubes}")
        self.gen.add(z3.Implies(lit, z3.And(*[z3.Or(*[self.hvars[h] == rat(v) for v in vals])
                                              for h, vals in cube.items()])))
        self._assume = [lit]
        for c in solutions:
            self._block_solution(c)
        for c in unknown:
            self._block_exact(c)
        self.solutions, self.unknown = [], []
        self.stats = SynthStats()

    def unrestrict(self) -> None:
        for lit in self._assume:
            self.gen.add(z3.Not(lit))  # retire the cube's guard
        self._assume = []

    def prune_recorded(self, cex: dict[str, object]) -> None:
        """Prune with a counterexample recorded by another run (a checkpoint or the
        shared pool): its observations, as :attr:`cex_log` stores them."""
        per = cex["values"]
        assert isinstance(per, dict)
        values = {name: {int(f): [_parse_val(x) for x in xs] for f, xs in fl.items()} for name, fl in per.items()}
        self._prune(values, Fraction(str(cex["MSS"])))

    # -- generator side ---------------------------------------------------------------
    def search_space(self) -> int:
        n = 1
        for d in self.domains.values():
            n *= len(d)
        return n

    def _block_exact(self, cand: Candidate) -> None:
        self.gen.add(z3.Or(*[self.hvars[h] != rat(v) for h, v in cand.items()]))

    def _block_solution(self, cand: Candidate) -> None:
        hs = self.var_holes or list(cand)
        self.gen.add(z3.Or(*[self.hvars[h] != rat(cand[h]) for h in hs]))

    def _prune(self, values: dict[str, dict[int, list[Fraction | bool]]], mss: Fraction) -> None:
        """Eq. B.1.4: on this trace's observations, differ from the recorded choices
        at some step of some flow."""
        m = self.query.model
        diffs = []
        outputs = [n for n in ("rate", "cwnd") if n in values] + [s.name for s in self.prog.states]
        for f in range(self.tr.N):
            for t in range(self.warmup, self.tr.T):
                def value(name: str, step: int, f: int = f) -> Fraction | bool:
                    return values[name][f][step]
                outs = step_outputs_on_values(self.prog, m.R, m.D, self.tr.T, t, mss, value, self.hvars)
                for name in outputs:
                    rec = values[name][f][t]
                    term = outs[name]
                    diffs.append(term != (z3.BoolVal(rec) if isinstance(rec, bool) else rat(rec)))
        self.gen.add(z3.Or(*diffs))

    def _output_definitions(self) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """(output variable, defining term over holes and trace) for every step the
        template runs: rate, cwnd and state, from the symbolic CCA encoding."""
        outs: set[str] = set()
        for f in range(self.tr.N):
            for t in range(self.warmup, self.tr.T):
                if self.prog.sets_rate:
                    outs.add(str(self.tr.rate_f[f][t]))
                if self.prog.sets_cwnd:
                    outs.add(str(self.tr.cwnd_f[f][t]))
                for vs in self.tr.state_f[f].values():
                    outs.add(str(vs[t]))
        defs = []
        for tag, c in self.sym_cca.constraints:
            if tag.startswith("CCA ") and z3.is_eq(c) and str(c.arg(0)) in outs:
                defs.append((c.arg(0), c.arg(1)))
        if len(defs) != len(outs):
            raise RuntimeError("could not find the definitions of the template's outputs")
        return defs

    def _prune_model(self, model: z3.ModelRef, ev: Evaluator) -> None:
        """Eq. B.1.4 on the counterexample itself: evaluate each output's defining
        term in the model with the holes left symbolic."""
        diffs = []
        for var, term in self.output_defs:
            rec = ev.ev(var)
            cand = model.eval(term, model_completion=False)
            diffs.append(cand != (z3.BoolVal(rec) if isinstance(rec, bool) else rat(rec)))
        self.gen.add(z3.Or(*diffs))

    def _record_values(self, ev: Evaluator) -> tuple[dict[str, dict[int, list[Fraction | bool]]], Fraction]:
        names = set(self.prog.reads) | {"rate", "cwnd"} | {s.name for s in self.prog.states}
        values: dict[str, dict[int, list[Fraction | bool]]] = {}
        for name in names:
            if (name == "rate" and not self.prog.sets_rate) or (name == "cwnd" and not self.prog.sets_cwnd):
                continue
            values[name] = {f: [ev.ev(x) for x in trace_series(self.tr, f, name)] for f in range(self.tr.N)}
        return values, ev.num(self.tr.MSS)

    # -- verifier side ------------------------------------------------------------------
    def _cca_encoding(self, cand: Candidate) -> Encoding:
        """The candidate's CCA constraints: the symbolic encoding with holes replaced."""
        pairs = [(self.hvars[h], rat(v)) for h, v in cand.items()]
        enc = Encoding()
        for tag, c in self.sym_cca.constraints:
            enc.add(tag, z3.substitute(c, *pairs))
        return enc

    def reverify(self, cand: Candidate) -> bool:
        """Re-verify a solution in a fresh solver, from a separate trace and encoding;
        the candidate is compiled strictly (units checked), its property re-checked,
        and the setup confirmed to admit a trace (no vacuous proof)."""
        from ccmatic.lang.cca import compile_into

        t0 = time.perf_counter()
        try:
            if self._fresh is None:
                scratch = Encoding()
                symbolic = {h: Val(hole_var(h), False, None, None, True) for h in self.domains}
                self._fresh = build(self.query, self.prog, holes=symbolic, cca_enc=scratch)  # type: ignore[arg-type]
            fresh = self._fresh
            enc = Encoding()
            try:
                for f in range(fresh.trace.N):
                    compile_into(self.prog, fresh.trace, f, enc=enc, holes=dict(cand))
            except SpecError:
                self.stats.ill_typed += 1
                return False
            enc.extend(fresh.base)
            prob = Problem(fresh.trace, self.prog, enc, fresh.prop, {k: Fraction(v) for k, v in cand.items()})
            return isinstance(solve(prob, RunOptions(self.opts.check_timeout_s, self.opts.seed + 1)), VProved)
        finally:
            self.stats.reverify_s += time.perf_counter() - t0

    # -- main loop ------------------------------------------------------------------------
    def run(self, progress: Callable[[Synthesizer, float], None] | None = None,
            should_stop: Callable[[], bool] | None = None,
            exchange: Callable[[Synthesizer], None] | None = None) -> SynthResult:
        """CEGIS until the generator runs out of candidates.  ``exchange`` is called
        before every generator step (parallel synthesis: publish new counterexamples
        and prune with the other workers')."""
        start = time.perf_counter()
        status = "complete"
        try:
            while True:
                if should_stop is not None and should_stop():
                    status = "interrupted"
                    break
                if self.opts.timeout_s is not None and time.perf_counter() - start > self.opts.timeout_s:
                    status = "timeout"
                    break
                if exchange is not None:
                    exchange(self)
                t0 = time.perf_counter()
                g = self.gen.check(*self._assume)
                self.stats.generator_s += time.perf_counter() - t0
                if g == z3.unsat:
                    break
                if g != z3.sat:
                    status = "interrupted" if (should_stop is not None and should_stop()) else "timeout"
                    break
                model = self.gen.model()
                hole_ev = Evaluator(model, self.fcache)
                cand = {h: hole_ev.num(v) for h, v in self.hvars.items()}
                self.stats.iterations += 1
                key = tuple(sorted(cand.items()))
                if key in self._seen:  # the generator must never repeat itself
                    raise RuntimeError(f"generator proposed candidate {cand} twice")
                self._seen.add(key)
                enc = self._cca_encoding(cand)
                t1 = time.perf_counter()
                left = None if self.opts.timeout_s is None else self.opts.timeout_s - (t1 - start)
                cap = _min_opt(self.opts.check_timeout_s, left)
                if cap is not None:  # the run's deadline also bounds the check in progress
                    self.verifier.solver.set("timeout", max(1, int(cap * 1000)))
                r = self.verifier.check(enc)
                self.stats.verifier_s += time.perf_counter() - t1
                deadline = self.opts.timeout_s
                if isinstance(r, Unknown) and deadline is not None and time.perf_counter() - start >= deadline:
                    status = "timeout"  # the deadline, not the candidate, ended this check
                    break
                if isinstance(r, Proved):
                    if self.reverify(cand):
                        text = fill_template(self.prog, cand, self._header(cand))
                        self.solutions.append(Solution(dict(cand), text))
                        self._block_solution(cand)
                    else:  # never accept what a fresh check does not confirm
                        self.unknown.append(dict(cand))
                        self.stats.unknown += 1
                        self._block_exact(cand)
                elif isinstance(r, Sat):
                    try:
                        ev = recheck(r.model, self.base.constraints + enc.constraints + [("neg", self.neg_prop)],
                                     self.fcache)
                    except RecheckError as e:
                        raise RuntimeError(f"counterexample failed the exact re-check: {e}") from e
                    self._prune_model(r.model, ev)
                    if self.opts.record_counterexamples:
                        values, mss = self._record_values(ev)
                        self.cex_log.append({"values": _values_json(values), "MSS": str(mss)})
                    self.stats.counterexamples += 1
                else:
                    assert isinstance(r, Unknown)
                    if should_stop is not None and should_stop():
                        status = "interrupted"
                        break
                    self.unknown.append(dict(cand))
                    self.stats.unknown += 1
                    self._block_exact(cand)
                if progress is not None:
                    progress(self, time.perf_counter() - start)
        except KeyboardInterrupt:
            status = "interrupted"
        except z3.Z3Exception:
            # an interrupt (Ctrl-C) cancels whatever Z3 call is running, e.g. the
            # model evaluation of the pruning step
            if should_stop is None or not should_stop():
                raise
            status = "interrupted"
        return SynthResult(status, list(self.solutions), self.stats, list(self.unknown), time.perf_counter() - start)

    def _header(self, cand: Candidate) -> str:
        q = self.query
        vals = ", ".join(f"?{h}={v}" for h, v in cand.items())
        return (f"synthesized by ccmatic from {Path(self.prog.path).name} for {q.name} "
                f"(model {q.model.name}, T={q.T})\nholes: {vals}")

    # -- checkpoints --------------------------------------------------------------------------
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update(self.prog.source.text.encode())
        h.update(Path(self.query.path).read_bytes() if Path(self.query.path).is_file() else b"")
        h.update(json.dumps({k: [str(v) for v in d] for k, d in self.domains.items()}, sort_keys=True).encode())
        h.update(str(self.query.T).encode())
        return h.hexdigest()

    def checkpoint(self, path: str | Path) -> None:
        if not self.opts.record_counterexamples:
            raise RuntimeError("checkpoints need SynthOptions(record_counterexamples=True)")
        data = {
            "fingerprint": self.fingerprint(),
            "query": self.query.path,
            "counterexamples": self.cex_log,
            "solutions": [{k: str(v) for k, v in s.holes.items()} for s in self.solutions],
            "unknown": [{k: str(v) for k, v in c.items()} for c in self.unknown],
            "stats": self.stats.__dict__,
        }
        tmp = Path(str(path) + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)

    def resume(self, path: str | Path) -> None:
        p = Path(path)
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise SpecError(Loc(str(p)), "checkpoint file not found") from None
        except (OSError, ValueError) as e:
            raise SpecError(Loc(str(p)), f"cannot read checkpoint: {e}") from None
        if data.get("fingerprint") != self.fingerprint():
            raise SpecError(Loc(str(p)), "checkpoint belongs to a different query, template or horizon",
                            "resume with the same query file and T")
        for cex in data["counterexamples"]:
            self.prune_recorded(cex)
            self.cex_log.append(cex)
        for s in data["solutions"]:
            cand = {k: Fraction(v) for k, v in s.items()}
            text = fill_template(self.prog, cand, self._header(cand))
            self.solutions.append(Solution(cand, text))
            self._block_solution(cand)
        for u in data["unknown"]:
            cand = {k: Fraction(v) for k, v in u.items()}
            self.unknown.append(cand)
            self._block_exact(cand)
        for k, v in data.get("stats", {}).items():
            if hasattr(self.stats, k):
                setattr(self.stats, k, v)


def _values_json(values: dict[str, dict[int, list[Fraction | bool]]]) -> dict[str, dict[str, list[object]]]:
    return {n: {str(f): [x if isinstance(x, bool) else str(x) for x in xs] for f, xs in per.items()}
            for n, per in values.items()}


def _parse_val(x: object) -> Fraction | bool:
    return x if isinstance(x, bool) else Fraction(str(x))
