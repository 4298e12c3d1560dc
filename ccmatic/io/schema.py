"""The schema of every input file, in one place: for each table its keys, with type,
domain, default and doc line.  The loaders check keys and read values through it
(unknown keys fail with the nearest known key), and docs/language.md's reference
section is rendered from it (``python -m ccmatic.io.schema --write docs/language.md``;
a test keeps the two equal).

A field with a reader checks its value's domain and returns it converted; a field
without one (a nested table, a list of formulas) is read by its loader, which checks
it with the schema of the nested table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import MAX_FLOWS, MAX_T
from ccmatic.core.model import MODEL_PARTS, BeliefTimeouts, Buffer
from ccmatic.io.toml import (
    TomlDoc,
    check_keys,
    read_bool,
    read_choice,
    read_frac,
    read_int,
    read_str,
    read_str_list,
)

Reader = Callable[[TomlDoc, str, Any], Any]


@dataclass(frozen=True)
class Field:
    key: str
    type: str
    domain: str
    default: str  # "required", "none", or the value used when the key is absent
    doc: str
    read: Reader | None = None

    @property
    def required(self) -> bool:
        return self.default == "required"


@dataclass(frozen=True)
class Schema:
    """The keys of one table (a file, or a table in it)."""

    title: str  # how errors and the docs name the table
    fields: tuple[Field, ...]
    note: str = ""

    def __getitem__(self, key: str) -> Field:
        return next(f for f in self.fields if f.key == key)

    @property
    def keys(self) -> set[str]:
        return {f.key for f in self.fields}

    def check(self, doc: TomlDoc, table: dict[str, Any], where: str | None = None, at: Loc | None = None) -> None:
        """Unknown keys (with the nearest known key as hint) and missing required keys.
        ``at``: where the table is (for a missing key, or a key of an inline table)."""
        where = where or self.title
        check_keys(doc, table, self.keys, where, at)
        for f in self.fields:
            if f.required and f.key not in table:
                raise SpecError(at or Loc(str(doc.path), 1, 1), f"{where} has no '{f.key}'",
                                f"add {f.key} ({f.type}): {f.doc}")

    def read(self, doc: TomlDoc, table: dict[str, Any], key: str, default: Any = None,
             at: Loc | None = None) -> Any:
        """``table[key]`` checked and converted by its field's reader, or ``default``.
        ``at``: where to point errors (an inline table's line) instead of the key."""
        f = self[key]
        if key not in table:
            return default
        if f.read is None:
            return table[key]
        try:
            return f.read(doc, key, table[key])
        except SpecError as e:
            if at is None:
                raise
            raise SpecError(at, e.message, e.hint) from None

    def markdown(self) -> str:
        rows = [f"| `{f.key}` | {f.type} | {f.domain or '—'} | {f.default} | {f.doc} |" for f in self.fields]
        head = [f"#### {self.title}", ""] + ([self.note, ""] if self.note else [])
        return "\n".join([*head, "| key | type | domain | default | meaning |", "|---|---|---|---|---|", *rows])


# -- readers with domains -----------------------------------------------------------------

def choice(*choices: str) -> Reader:
    return lambda doc, key, v: read_choice(doc, key, v, choices)


def number(lo: Fraction | None = None, strict: bool = False) -> Reader:
    def read(doc: TomlDoc, key: str, v: Any) -> Fraction:
        x = read_frac(doc, key, v)
        if lo is not None and (x < lo or (strict and x == lo)):
            raise doc.err(key, f"'{key}' must be {'greater than' if strict else 'at least'} {lo}, got {x}")
        return x
    return read


def integer(lo: int, hi: int | None = None, why: str = "") -> Reader:
    def read(doc: TomlDoc, key: str, v: Any) -> int:
        n = read_int(doc, key, v, lo)
        if hi is not None and n > hi:
            raise doc.err(key, f"{key} = {n:,} is over the limit of {hi}{why}")
        return n
    return read


def boolean(doc: TomlDoc, key: str, v: Any) -> bool:
    return read_bool(doc, key, v)


def string(doc: TomlDoc, key: str, v: Any) -> str:
    return read_str(doc, key, v)


def strings(doc: TomlDoc, key: str, v: Any) -> list[str]:
    return read_str_list(doc, key, v)


def _dupacks(doc: TomlDoc, key: str, v: Any) -> Fraction | None:
    return None if v == "free" else number(Fraction(0))(doc, key, v)


BUFFER_HINT = "use \"infinite\", \"arbitrary\", {finite = k} (k BDPs), {small = k} or {large = k}"


def _buffer(doc: TomlDoc, key: str, v: Any) -> Buffer:
    if v in ("infinite", "arbitrary"):
        return Buffer(v)
    if isinstance(v, str):
        raise doc.err(key, f"unknown buffer mode '{v}'", BUFFER_HINT)
    if isinstance(v, dict) and len(v) == 1:
        (mode, k), = v.items()
        if mode in ("finite", "small", "large"):
            kk = read_frac(doc, key, k)
            if kk < 0:
                raise doc.err(key, "buffer size must be non-negative")
            return Buffer(mode, kk)
    raise doc.err(key, f"bad buffer {v!r}", BUFFER_HINT)


def _per_flow(lo: int, example: str) -> Reader:
    def read(doc: TomlDoc, key: str, v: Any) -> tuple[int, ...]:
        if not isinstance(v, list) or not v:
            raise doc.err(key, f"{key} must be a list of whole numbers, one per flow", f"e.g. {key} = {example} for N = 2")
        return tuple(read_int(doc, key, x, lo) for x in v)
    return read


def _belief_timeouts(doc: TomlDoc, key: str, v: Any) -> BeliefTimeouts:
    if not isinstance(v, dict):
        raise doc.err(key, "belief_timeouts must be a table")
    BELIEF_TIMEOUTS.check(doc, v)
    return BeliefTimeouts(**{k: BELIEF_TIMEOUTS.read(doc, v, k) for k in v})


BELIEF_TIMEOUTS = Schema("belief_timeouts (a model's inline table)", (
    Field("period", "integer", "≥ 1", "none", "re-expand the beliefs every this many steps", integer(1)),
    Field("guard", "number", "> 0", "none", "re-expand only when the beliefs are this close", number(Fraction(0), True)),
    Field("invalid", "boolean", "", "true", "re-expand when the beliefs contradict each other", boolean),
    Field("max_expand", "number", "≥ 1", "2", "factor by which a re-expansion widens", number(Fraction(1))),
))

MODEL = Schema("model file, and a query's or proof's [model_params]", (
    Field("family", "string", "\"ideal\", \"cbr_delay\", \"ccac\"", "required (file)", "the model family (thesis §2.3)",
          choice("ideal", "cbr_delay", "ccac")),
    Field("description", "string", "", "\"\"", "one line shown by 'ccmatic list'", string),
    Field("C", "number", "> 0", "1", "link rate, bytes per step", number(Fraction(0), True)),
    Field("R", "integer", "≥ 1", "1", "propagation delay (RTprop), steps", integer(1)),
    Field("D", "integer", "≥ 0; 0 on ideal", "1", "jitter bound, steps (R + D < T)", integer(0)),
    Field("N", "integer", f"1 … {MAX_FLOWS}", "1", "number of flows", integer(1, MAX_FLOWS, " flows")),
    Field("compose", "boolean", "", "true", "CCAC: the composing variant (waste only while the queue is empty)", boolean),
    Field("epsilon", "number", "≥ 0", "0", "CCAC non-composing: waste while A − L ≤ S + ε", number(Fraction(0))),
    Field("buffer", "string or table", "\"infinite\", \"arbitrary\", {finite|small|large = k ≥ 0}", "\"infinite\"",
          "buffer size in BDPs", _buffer),
    Field("loss", "string", "\"droptail\", \"ccac\"", "\"ccac\"", "drop-tail (deterministic) or CCAC's loss rule",
          choice("droptail", "ccac")),
    Field("dupacks", "number or \"free\"", "≥ 0", "3", "dupack threshold in MSS; \"free\": any number of bytes "
          "(CCAC's default)", _dupacks),
    Field("timeouts", "boolean", "", "false", "retransmission timeouts (CCAC's RTO rule)", boolean),
    Field("mss_max_bdp", "number", "> 0", "none", "MSS < k·C·R", number(Fraction(0), True)),
    Field("belief_timeouts", "table", "see below", "none", "belief timeouts (§4.1.1.2)", _belief_timeouts),
    Field("qdel_prehistory", "string", "\"free\", \"hidden\"", "\"hidden\"",
          "delay buckets of bytes sent before the trace", choice("free", "hidden")),
    Field("belief_evidence", "string", "\"sound\", \"reference\"", "\"sound\"", "evidence that a step was utilized",
          choice("sound", "reference")),
    Field("c_lo_lambda_divisor", "string", "\"text\", \"reference\"", "\"text\"",
          "c_lo_lambda's divisor: R + D (Eq. 4.2.2) or R + D + 1 (the Table 4.1 tool's)", choice("text", "reference")),
    Field("qdel_growth", "string", "\"fresh\", \"always\"", "\"fresh\"", "when the one-step delay growth rule binds",
          choice("fresh", "always")),
    Field("loss_detection", "string", "\"dupack\", \"oracle\"", "\"dupack\"",
          "dupacks (CCAC) or one RTT later (the prototype)", choice("dupack", "oracle")),
    Field("jitter", "list of integers", "≥ 0, one per flow; 0 on ideal", "none",
          "the network's non-congestive delay per flow, steps (none: D for every flow; the CCA still assumes D)",
          _per_flow(0, "[2, 0]")),
    Field("rtprop", "list of integers", "≥ 1, one per flow", "none",
          "each flow's RTprop, steps (none: R for every flow; a flow's CCA reads its own as R)", _per_flow(1, "[1, 3]")),
    Field("fifo", "boolean", "", "true", "N > 1: the bottleneck serves the flows first-in first-out", boolean),
    Field("topology", "string", "\"dumbbell\", \"parking_lot\"", "\"dumbbell\"",
          "parking_lot: two bottlenecks; flow 0 crosses both, flows 1 and 2 one each (N = 3, infinite buffer)",
          choice("dumbbell", "parking_lot")),
))

SCENARIO = Schema("scenario (the keys a query and a proof share)", (
    Field("cca", "string", "a name from 'ccmatic list', a path, or \"none\"", "required (proofs), none (queries)",
          "the CCA or template (.cca); none: no CCA, any sender (see Model-only questions)", string),
    Field("model", "string", "a name from 'ccmatic list' or a path", "required", "the network model", string),
    Field("T", "integer", f"2 … {MAX_T} (--max-T raises it)", "required", "horizon: steps 0 … T − 1", integer(2)),
    Field("start", "integer", "0 … T − 2", "0", "step at which [initial] is assumed", integer(0)),
    Field("periodic", "integer", "1 … T − 1", "none",
          "steady-state traces as CCAC's make_periodic: cwnd and rate of the last K steps repeat the first K; "
          "the queue, A − L − S and L − Ld at the last step equal the first step's", integer(1)),
    Field("periodic_all", "integer", "1 … T − 1", "none",
          "another steady state: cwnd and rate as periodic, and the queue, A − L − S and L − Ld of step "
          "T − K + k tied to step k's, k < K (not with periodic; for K > 1 neither form implies the other)", integer(1)),
    Field("model_params", "table", "model keys", "none", "overrides of the model's keys", None),
    Field("initial", "table", "see [initial]", "none", "initial conditions at step start", None),
    Field("assume", "list of strings", "formulas", "[]", "assumptions on the trace", None),
    Field("model_parts", "list of strings", ", ".join(f"\"{p}\"" for p in MODEL_PARTS), "all",
          "the parts of the model assumed (see Model-only questions)", strings),
    Field("description", "string", "", "\"\"", "one line shown by 'ccmatic list'", string),
    Field("expect", "string", "\"proved\", \"counterexample\", \"unknown\"; exists: \"witness\", "
          "\"no_witness\", \"unknown\"", "none", "the golden verdict the test suite checks",
          choice("proved", "counterexample", "unknown", "witness", "no_witness")),
))

INITIAL = Schema("[initial]", (
    Field("beliefs_consistent", "boolean", "", "false", "beliefs start consistent with the link (see above)", boolean),
    Field("no_initial_loss", "boolean", "", "false", "no undetected loss at start (see above)", boolean),
))

QUERY = Schema("query file (queries/**/*.toml)", (
    *SCENARIO.fields,
    Field("objective", "list of tables", "see [[objective]]", "required (or exists)",
          "the property: their conjunction", None),
    Field("exists", "string or list", "formulas", "none", "a witness question instead of objectives: is there a "
          "trace where all of these hold?", strings),
    Field("holes", "table", "name = [numbers, distinct]", "none", "synthesis: each hole's domain", None),
    Field("expect_solutions", "integer", "≥ 0", "none", "synthesis: golden solution count", integer(0)),
    Field("thesis_solutions", "integer", "≥ 0", "none", "synthesis: the thesis' reported count", integer(0)),
))

OBJECTIVE = Schema("[[objective]]", (
    Field("kind", "string", "\"expr\" or a kind of the objective library", "required", "what the objective states",
          None),
    Field("label", "string", "", "the kind", "name shown in reports", string),
    Field("expr", "string", "a formula", "required for expr", "the formula of kind = \"expr\"", string),
), note="Any other key is a parameter of the kind (listed by `ccmatic list`, defined in objectives/standard.toml).")

PROOF = Schema("proof file (proofs/*.toml)", (
    *SCENARIO.fields,
    Field("invariant", "string or list", "formulas of step t", "[]", "assumed at start, checked at the last step",
          strings),
    Field("constants", "table", "name = number or [constants.name] table", "none", "the proof's constants", None),
    Field("define", "table", "name = formula; \"name(t)\" takes a step", "none", "named formulas", None),
    Field("states", "table", "name = formula of step t", "required", "the transition system's states", None),
    Field("progress", "list of tables", "see [[progress]]", "none", "progress terms", None),
    Field("lemma", "list of tables", "see [[lemma]]", "required", "premise ⇒ conclusion over the trace", None),
    Field("transitions", "table", "see [transitions.state]", "required", "the lemmas that move between states", None),
    Field("steady", "string", "a state", "required", "the steady state", string),
    Field("objectives", "string", "a definition without arguments", "none", "what the steady state guarantees",
          string),
    Field("together", "boolean", "", "false", "prove: all lemmas as one solver question first (docs/proofs.md)",
          boolean),
))

CONSTANT = Schema("[constants.name]", (
    Field("value", "number", "", "required", "the value the proof uses", number()),
    Field("range", "[lo, hi]", "lo < hi", "none", "where 'ccmatic search' looks", None),
    Field("easier", "string", "\"up\", \"down\"", "none", "the direction in which the lemmas get weaker",
          choice("up", "down")),
    Field("unit", "string", "\"1\", \"bytes\", \"seconds\", \"rate\"", "\"1\"", "the constant's unit",
          choice("1", "bytes", "seconds", "rate")),
))

PROGRESS = Schema("[[progress]]", (
    Field("name", "string", "a new name", "required", "the term's name (cases share it)", string),
    Field("when", "string", "formula of step t", "none", "the case applies from such states", string),
    Field("measures", "string or list", "formulas \"m <= bound\"", "required", "bounded measures", strings),
    Field("keep", "string or list", "formulas", "[]", "conditions kept from degrading", strings),
    Field("factor", "number or formula", "> 1", "one of factor, step", "multiplicative improvement", None),
    Field("step", "number or formula", "> 0", "one of factor, step", "additive improvement", None),
    Field("order", "string", "\"any\", \"lexicographic\"", "\"any\"", "how measures are ranked",
          choice("any", "lexicographic")),
))

LEMMA = Schema("[[lemma]]", (
    Field("name", "string", "unique", "required", "the lemma's name", string),
    Field("premise", "string", "formula", "True", "what is assumed", string),
    Field("conclusion", "string", "formula", "required", "what must follow", string),
    Field("description", "string", "", "\"\"", "a line for reports", string),
))

TRANSITION = Schema("[transitions.state]", (
    Field("to", "string or list", "states other than this", "[]", "states this one moves to", strings),
    Field("loop", "string or list", "[[progress]] names or the objectives", "[]", "the self-loop's progress", strings),
    Field("by", "string or list", "lemma names", "required", "the lemmas that justify the moves", strings),
    Field("guarantees", "string or list", "definitions without arguments", "[]", "what holds in this state", strings),
))

DECLARATIONS = Schema("CCA declarations (`name: unit [= initial]`)", (
    Field("bytes", "unit", "any number (negative acts as 0 in rate/cwnd)", "the adversary's",
          "an amount of data, e.g. a window or a sequence number"),
    Field("seconds", "unit", "any number", "the adversary's", "a duration, e.g. a delay estimate"),
    Field("rate", "unit", "any number", "the adversary's", "bytes per second"),
    Field("count", "unit", "any number", "the adversary's", "dimensionless, e.g. a phase or a gain"),
    Field("bool", "unit", "True, False (as in Python)", "the adversary's", "a flag"),
), note="The initial value (after `=`) may use numbers, `MSS`, `R`, `D`, `T` and `choose(a, b, ...)`; "
        "without one the initial value is the adversary's (any value of the unit).")

SCHEMAS = (DECLARATIONS, MODEL, BELIEF_TIMEOUTS, QUERY, INITIAL, OBJECTIVE, PROOF, CONSTANT, PROGRESS, LEMMA, TRANSITION)

BEGIN, END = "<!-- schema:begin (generated by python -m ccmatic.io.schema) -->", "<!-- schema:end -->"


def reference() -> str:
    """The markdown reference of every input file (docs/language.md)."""
    return "\n\n".join(s.markdown() for s in SCHEMAS)


def with_reference(text: str) -> str:
    """``text`` with the part between the schema markers replaced by :func:`reference`."""
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{reference()}\n{END}{tail}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        p = Path(sys.argv[2])
        p.write_text(with_reference(p.read_text()))
    else:
        print(reference())
