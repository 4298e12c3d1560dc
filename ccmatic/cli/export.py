"""``ccmatic export CCA --to ebpf``: the CCA file as a Linux ``tcp_congestion_ops``
eBPF program (docs/export.md): written, optionally compiled (``clang -target
bpf``), checked against the exact semantics (``--check N``), loaded into the kernel
(``--load``: registered, held, unregistered), with an iperf3 smoke run (``--smoke``)."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

from ccmatic.cli.common import EXIT_OK, Subparsers, library
from ccmatic.core.errors import Loc, SpecError
from ccmatic.export import build
from ccmatic.export.cdomain import SHIFT
from ccmatic.export.harness import build_harness, differential
from ccmatic.export.kernel import NAME_MAX, STEPS, bpf_source, ca_name
from ccmatic.export.program import Settings, generate
from ccmatic.spec.cca import CcaProgram, load_cca

EXIT_TOOL = 1  # a tool failed (compiler, verifier, differential mismatch)


def _fail(err: TextIO, e: build.BuildError, log: Path) -> int:
    text = str(e)
    log.write_text(text + "\n")
    err.write(f"error: {text.splitlines()[0]} (hint: the tool's full output is in {log})\n")
    return EXIT_TOOL


def _settings(args: argparse.Namespace) -> Settings:
    if args.D < 0 or args.belief_period < 1:
        raise SpecError(Loc("--D/--belief-period"), "D must be >= 0 and the belief period >= 1")
    return Settings(D=args.D, belief_period=args.belief_period, init_rate_pkts=args.init_rate_pkts,
                    init_cwnd_pkts=args.init_cwnd_pkts, steps=args.steps)


def _rtprop_us(args: argparse.Namespace) -> int | None:
    if args.rtprop_ms is None:
        return None
    us = round(Fraction(str(args.rtprop_ms)) * 1000)
    if not 1 <= us <= 10 ** 7:
        raise SpecError(Loc("--rtprop-ms"), "the RTprop must be between 0.001 ms and 10 s")
    return us


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    prog: CcaProgram = load_cca(library(args).require("templates", args.cca))
    s, rtprop = _settings(args), _rtprop_us(args)
    name = args.name or ca_name(prog.name)
    if len(name) > NAME_MAX or not name.replace("_", "").isalnum() or name[0].isdigit():
        raise SpecError(Loc("--name"), f"'{name}' is not a C identifier of at most {NAME_MAX} characters")
    g = generate(prog, s)
    src_text = bpf_source(g, s, name, rtprop)
    outdir = Path(args.o or f"export_{prog.name}")
    outdir.mkdir(parents=True, exist_ok=True)
    src = outdir / f"{name}.bpf.c"
    src.write_text(src_text)
    res: dict[str, Any] = {"cca": prog.name, "name": name, "source": str(src), "fraction_bits": SHIFT,
                           "temporaries": g.temps, "rtprop_us": rtprop, "D": s.D, "belief_period": s.belief_period, "steps": s.steps}
    say = (lambda line: None) if args.json else (lambda line: out.write(line + "\n"))
    say(f"wrote {src}: congestion control '{name}' ({' and '.join(n for n in ('rate', 'cwnd') if n in dict(g.outputs))}"
        f", fixed point with {SHIFT} fraction bits, RTprop {'%g ms' % (rtprop / 1000) if rtprop else 'measured'})")
    log = outdir / f"{name}.log"
    try:
        if args.check:
            res["check"] = _check(prog, g, s, outdir, args.check, args.check_steps, say)
            if res["check"]["mismatches"]:
                _emit(args, out, res)
                return EXIT_TOOL
        if args.compile or args.load:
            why = build.missing(load=args.load)
            if why is not None:
                raise SpecError(Loc("ccmatic export"), f"cannot {'load' if args.load else 'compile'}: {why}")
            obj = build.compile_bpf(src)
            res["object"] = str(obj)
            say(f"compiled {obj} (clang -O2 -target bpf)")
        if args.load:
            res["load"] = _load(obj, name, args, say)
    except build.NameHeld as e:
        err.write(f"error: {e} (hint: stop that process first, or load under another name with --name)\n")
        return EXIT_TOOL
    except build.BuildError as e:
        return _fail(err, e, log)
    _emit(args, out, res)
    return EXIT_OK


def _check(prog: CcaProgram, g: Any, s: Settings, outdir: Path, n: int, steps: int, say: Any) -> dict[str, Any]:
    exe = build_harness(g, s, outdir)
    r = differential(prog, g, s, exe, n, steps)
    say(f"differential check: {r.sequences} random sequences, {r.steps} steps: {len(r.mismatches)} mismatches, "
        f"largest difference {float(r.max_error):.3g} units, {float(r.max_relative):.3g} of the value "
        "(C vs exact; allowed 1/64 of a unit + 2^-12 of the value)")
    for m in r.mismatches[:5]:
        say(f"  {m}")
    return {"sequences": r.sequences, "steps": r.steps, "mismatches": len(r.mismatches),
            "max_error": float(r.max_error), "max_relative": float(r.max_relative)}


def _load(obj: Path, name: str, args: argparse.Namespace, say: Any) -> dict[str, Any]:
    got: dict[str, Any] = {}

    def hold() -> None:
        got["registered"] = True
        if args.smoke:
            got["smoke"] = build.smoke(name, args.smoke)
            sm = got["smoke"]
            say(f"smoke: iperf3 {sm['seconds']} s over veth with {sm['congestion']}: "
                f"{sm['bits_per_second'] / 1e6:.1f} Mbit/s, {sm['retransmits']} retransmits; "
                f"mid-run 'ss -ti': cwnd {sm.get('ss_cwnd')} packets, pacing rate {sm.get('ss_pacing_rate')}")
        else:
            say(f"'{name}' is registered: select it with setsockopt(TCP_CONGESTION) or "
                f"sysctl net.ipv4.tcp_congestion_control; "
                + ("Ctrl-C or SIGTERM unregisters" if args.hold is None else f"unregistering in {args.hold:g} s"))
            build.wait(args.hold)

    build.load(obj, name, hold, say)
    got["left_registered"] = name in build.available()
    return got


def _emit(args: argparse.Namespace, out: TextIO, res: dict[str, Any]) -> None:
    if args.json:
        out.write(json.dumps(res, indent=2) + "\n")


def add_parser(sub: Subparsers, common: argparse.ArgumentParser, summary: str) -> None:
    p = sub.add_parser("export", parents=[common], help=summary, description=__doc__)
    p.add_argument("cca", help="CCA file (name or path)")
    p.add_argument("--to", choices=["ebpf"], default="ebpf", help="target (ebpf: a tcp_congestion_ops program)")
    p.add_argument("-o", metavar="DIR", default=None, help="output folder (default export_<cca>)")
    p.add_argument("--name", default=None, help=f"congestion control name (default ccm_<cca>, {NAME_MAX} chars at most)")
    p.add_argument("--rtprop-ms", type=float, default=None, metavar="MS",
                   help="the step length (RTprop) in ms (default: measured, the minimum RTT)")
    p.add_argument("--D", type=int, default=0, help="the jitter bound in steps (default 0)")
    p.add_argument("--steps", choices=STEPS, default="ack", help="where the steps begin: at the first ACK an RTprop "
                   "after the last (default), or on a fixed grid an RTprop apart (docs/export.md)")
    p.add_argument("--belief-period", type=int, default=10, metavar="N",
                   help="steps between belief timeouts (default 10, as the simulator)")
    p.add_argument("--init-rate-pkts", type=int, default=10, metavar="N", help="rate before the first step, packets per RTprop")
    p.add_argument("--init-cwnd-pkts", type=int, default=10, metavar="N", help="window before the first step, packets")
    p.add_argument("--compile", action="store_true", help="compile with clang -target bpf")
    p.add_argument("--load", action="store_true", help="compile, register (the kernel verifier runs), hold, unregister")
    p.add_argument("--hold", type=float, default=None, metavar="S", help="with --load: seconds to stay registered "
                   "(default: until Ctrl-C or SIGTERM)")
    p.add_argument("--smoke", type=int, default=0, metavar="S",
                   help="with --load: an iperf3 run of S seconds over a veth pair between two namespaces")
    p.add_argument("--check", type=int, default=0, metavar="N",
                   help="differential check: N random observation sequences, C (userspace build) vs exact")
    p.add_argument("--check-steps", type=int, default=30, metavar="K", help="boundaries per sequence (default 30)")
    p.set_defaults(handler=cmd_export)
