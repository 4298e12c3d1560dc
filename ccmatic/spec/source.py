"""Source text handling: the ``=>`` operator, holes, and location mapping.

Python has no ``=>``; before parsing, ``A => B`` is rewritten at the token level to
``__implies__(A, B)`` with ``=>`` binding weaker than every other operator and
associating to the right.  Holes ``?`` / ``?name`` (templates) become
``__hole__name`` identifiers.  A :class:`Source` remembers the rewrites so that
error columns point into the text the user wrote.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from ccmatic.core.errors import Loc, SpecError
from ccmatic.core.limits import MAX_DEPTH, MAX_FILE_BYTES
from ccmatic.core.source import Source

IMPLIES = "__implies__"
HOLE_PREFIX = "__hole__"


def read_source(path: str | Path, what: str = "file") -> str:
    """Read a user file as UTF-8 text; every failure is a one-line :class:`SpecError`.
    Only regular files up to :data:`MAX_FILE_BYTES` are read (a FIFO or a device
    such as /dev/zero would block or never end)."""
    p = Path(path)
    try:
        if p.exists() and not p.is_file():
            kind = "a folder" if p.is_dir() else "not a regular file"
            raise SpecError(Loc(str(path)), f"{what} is {kind}", "give the path of a text file")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SpecError(Loc(str(path)), f"{what} is {size:,} bytes, over the limit of {MAX_FILE_BYTES:,}")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(Loc(str(path)), f"{what} not found", "check the path, or run 'ccmatic list'") from None
    except UnicodeDecodeError as e:
        data = e.object
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SpecError(Loc(str(path), line, col), f"{what} is not valid UTF-8 text (byte 0x{data[e.start]:02x})",
                        "save the file as UTF-8") from None
    except OSError as e:
        raise SpecError(Loc(str(path)), f"cannot read {what}: {e.strerror}") from None


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def prepare(src: Source) -> str:
    """Rewrite holes and ``=>``; return text that :func:`ast.parse` accepts."""
    text = _rewrite_holes(src)
    while True:
        new = _rewrite_one_implies(src, text)
        if new is None:
            return text
        text = new


def _rewrite_holes(src: Source) -> str:
    if "?" not in src.text:
        return src.text
    out = []
    counter = 0
    for i, line in enumerate(src.text.split("\n"), start=1):
        code, hash_, comment = line.partition("#")  # a '#' starts a comment, as before any '?'
        res = []
        done = 0  # characters of ``code`` copied so far
        width = 0  # characters written so far
        for m in _HOLE.finditer(code):
            name = m.group(1)
            if not name:
                counter += 1
                name = f"h{counter}"
            elif not (name[0].isalpha() or name[0] == "_"):
                raise SpecError(src.loc(i, m.start()), f"bad hole name '?{name}'", "hole names start with a letter")
            repl = HOLE_PREFIX + name
            width += m.start() - done
            src.edits.setdefault(i, []).append((width, len(repl) - (m.end() - m.start())))
            res += [code[done:m.start()], repl]
            width += len(repl)
            done = m.end()
        res.append(code[done:])
        out.append("".join(res) + hash_ + comment)
    return "\n".join(out)


#: a hole: ``?`` and the name's letters, digits and underscores (none: an anonymous hole)
_HOLE = re.compile(r"\?(\w*)")


_STOP_RIGHT = {"for", "async"}
_STOP_LEFT = {"for", "in", "if", "else", "lambda", "return", "assert", "elif", "while"}


def _rewrite_one_implies(src: Source, text: str) -> str | None:
    """Rewrite the right-most ``=>`` of ``text``; None when there is none."""
    if "=>" not in text:  # nothing to rewrite (tokenizing a large file takes seconds)
        return None
    try:
        toks = _tokens(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None  # let ast.parse report the syntax error
    toks = [t for t in toks if t.type not in (tokenize.COMMENT, tokenize.NL)]
    pos = None
    for i in range(len(toks) - 1):
        a, b = toks[i], toks[i + 1]
        if a.string == "=" and b.string == ">" and a.end == b.start:
            pos = i
    if pos is None:
        return None
    line_starts = [0]
    for line in text.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)

    def off(rc: tuple[int, int]) -> int:
        return line_starts[rc[0] - 1] + rc[1]

    # left boundary
    depth = 0
    pending_else = 0  # 'else' tokens seen at depth 0 whose 'if' is still to the left
    i = pos - 1
    left_tok = None
    while i >= 0:
        tk = toks[i]
        s = tk.string
        if tk.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            break
        if s in (")", "]", "}"):
            depth += 1
        elif s in ("(", "[", "{"):
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and s == ">" and i > 0 and toks[i - 1].string == "=" and toks[i - 1].end == tk.start:
            break  # an earlier '=>': right-associative, so it takes this one as its conclusion
        elif depth == 0 and tk.type == tokenize.NAME and s == "else":
            pending_else += 1  # the whole if-expression is the premise
        elif depth == 0 and tk.type == tokenize.NAME and s == "if" and pending_else:
            pending_else -= 1
        elif depth == 0 and (s in (",", ":", "=") or (tk.type == tokenize.NAME and s in _STOP_LEFT)):
            break
        left_tok = tk
        i -= 1
    # right boundary
    depth = 0
    j = pos + 2
    right_tok = None
    while j < len(toks):
        tk = toks[j]
        s = tk.string
        if tk.type in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            break
        if s in ("(", "[", "{"):
            depth += 1
        elif s in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (s in (",", ":") or (tk.type == tokenize.NAME and s in _STOP_RIGHT)):
            break
        right_tok = tk
        j += 1
    arrow = toks[pos]
    if left_tok is None or right_tok is None:
        raise SpecError(
            src.loc(arrow.start[0], arrow.start[1]),
            "'=>' needs an expression on both sides",
            "write 'premise => conclusion'",
        )
    lo = off(left_tok.start)
    ao = off(arrow.start)
    ro = off(right_tok.end)
    head = IMPLIES + "("
    new = text[:lo] + head + text[lo:ao] + "," + text[ao + 2 : ro] + ")" + text[ro:]
    # record column shifts, in the coordinates of the rewritten text
    ln = left_tok.start[0]
    src.edits.setdefault(ln, []).append((left_tok.start[1], len(head)))
    comma = arrow.start[1] + (len(head) if arrow.start[0] == ln else 0)
    src.edits.setdefault(arrow.start[0], []).append((comma + 1, -1))  # '=>' became ','
    rl = right_tok.end[0]
    paren = right_tok.end[1] + (len(head) if rl == ln else 0) - (1 if rl == arrow.start[0] else 0)
    src.edits.setdefault(rl, []).append((paren, 1))
    return new


def parse(src: Source, mode: str) -> ast.AST:
    """Parse prepared source; ``mode`` is 'exec' (programs) or 'eval' (expressions)."""
    text = prepare(src)
    try:
        tree = ast.parse(text, filename=src.file, mode=mode)
    except SyntaxError as e:
        msg = (e.msg or "syntax error").split(";")[0]  # Python's digit-limit message runs on
        raise SpecError(src.loc(e.lineno, (e.offset or 1) - 1), f"syntax error: {msg}") from None
    except (MemoryError, RecursionError):  # CPython's parser stack (about 6,000 nested levels)
        raise SpecError(src.loc(1, 0), "too deeply nested for Python's parser (it takes about 5,000 elif "
                        "branches or nested levels)", "split the chain into steps with temporaries") from None
    check_depth(src, tree)
    return tree


def check_depth(src: Source, tree: ast.AST) -> None:
    """Refuse a tree nested deeper than :data:`MAX_DEPTH` (measured without recursion)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
            raise SpecError(src.loc(line, col), f"nested more than {MAX_DEPTH:,} levels deep",
                            "split long elif chains or sums into steps with temporaries")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
