"""Value grammar of HRDF attributes: floats, formulas, rotation matrices, translation vectors.

The HRDF spec (hebi-hrdf FORMAT.md and GRAMMAR.md) defines these as small formal languages; this
module implements them with a hand-written tokenizer and recursive-descent parser (never
``eval``), so every rejection can say *where* the text went wrong. Errors are
:class:`GrammarError` carrying a 1-based column; :mod:`hebictl.formats.hrdf` turns them into
``FormatError``s naming the file, line and attribute.

Grammar (GRAMMAR.md; whitespace is skipped between tokens)::

    float      := digits? '.' digits exponent? | digits '.' exponent? | digits exponent?
    exponent   := ('e' | 'E') ('+' | '-')? digits                 # C/C++/Java literal, no sign
    formula    := additive
    additive   := multiplicative (('+' | '-') multiplicative)*    # left-associative
    multiplicative := unary (('*' | '/') unary)*                  # left-associative
    unary      := ('+' | '-') unary | primary
    primary    := float | 'pi' | '(' additive ')'                 # 'pi' is case-sensitive
    rotation   := term ('*' term)*        term := ('Rx' | 'Ry' | 'Rz') '(' formula ')'

A literal has no sign: signs are unary operators of a formula. The elements of a 9-number
rotation matrix and of a translation vector are *plain* floats, which FORMAT.md lists with a sign
glued to the literal (``-3.24E-2`` valid, ``- 1.3`` invalid), so there a sign is accepted only
immediately before the digits.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from hebictl import limits

#: The value hebi-py's C library uses for ``pi`` in formulas: float32(pi) widened to double
#: (3.1415927410125732, 8.7e-8 above pi). Pass it as ``pi=`` to reproduce hebi-py bit for bit.
HEBI_PI: Final[float] = 3.1415927410125732

#: HRDF whitespace (FORMAT.md, "Terms").
WHITESPACE: Final[str] = " \t\r\n"

#: A C decimal floating constant without sign (GRAMMAR.md ``DecimalFloatingConstant``).
FLOAT_LITERAL: Final[re.Pattern[str]] = re.compile(
    r"(?:[0-9]*\.[0-9]+|[0-9]+\.|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PLAIN_FLOAT = re.compile(r"[+-]?" + FLOAT_LITERAL.pattern)
# A number-like run: greedy so that '2.4.3', '0x10', '1e' or '1.5f' are reported as one bad number.
_NUMBER_RUN = re.compile(r"[0-9.](?:[0-9.A-Za-z_]|(?<=[eE])[+-])*")
_IDENT_RUN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")

#: Frobenius-norm tolerance on R·Rᵀ − I for a 9-number rotation matrix; hebi-py's threshold
#: (measured: it accepts a diagonal entry 1 + 4.99e-6 and rejects 1 + 5.01e-6).
ROTATION_TOLERANCE: Final[float] = 1e-5


class GrammarError(ValueError):
    """A value does not match its grammar; ``column`` (1-based) points into the value text."""

    def __init__(self, message: str, column: int | None = None) -> None:
        self.message = message
        self.column = column
        super().__init__(message if column is None else f"{message} at column {column}")


@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "pi", "ident", "op" ('+-*/'), "(", ")", "end"
    text: str
    column: int  # 1-based
    value: float = 0.0


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in WHITESPACE:
            i += 1
            continue
        col = i + 1
        if ch in "+-*/":
            tokens.append(_Token("op", ch, col))
            i += 1
        elif ch in "()":
            tokens.append(_Token(ch, ch, col))
            i += 1
        elif ch.isascii() and (ch.isdigit() or ch == "."):
            m = _NUMBER_RUN.match(text, i)
            assert m is not None
            word = m.group()
            if FLOAT_LITERAL.fullmatch(word) is None:
                raise GrammarError(f"malformed number {word!r}", col)
            value = float(word)
            if not math.isfinite(value):
                raise GrammarError(f"number {word!r} is out of range", col)
            tokens.append(_Token("num", word, col, value))
            i = m.end()
        elif ch.isascii() and (ch.isalpha() or ch == "_"):
            m = _IDENT_RUN.match(text, i)
            assert m is not None
            word = m.group()
            tokens.append(_Token("pi" if word == "pi" else "ident", word, col))
            i = m.end()
        else:
            raise GrammarError(f"unexpected character {ch!r}", col)
    tokens.append(_Token("end", "", n + 1))
    return tokens


class _Parser:
    """Recursive descent over the token list; one instance per attribute value."""

    def __init__(self, text: str, pi: float) -> None:
        lim = limits.current()
        if len(text) > lim.max_formula_length:
            raise GrammarError(f"value is {len(text)} characters long, over the limit "
                               f"ReaderLimits.max_formula_length={lim.max_formula_length}", 1)
        self.tokens = _tokenize(text)
        self.pos = 0
        self.pi = pi
        self.depth = 0  # open parentheses: the recursion depth of additive()
        self.max_depth = lim.max_formula_depth

    @property
    def tok(self) -> _Token:
        return self.tokens[self.pos]

    def advance(self) -> _Token:
        t = self.tokens[self.pos]
        self.pos += 1
        return t

    def expect_end(self, after_what: str = "operator") -> None:
        t = self.tok
        if t.kind != "end":
            if t.kind == ")":
                raise GrammarError("unbalanced ')'", t.column)
            raise GrammarError(f"expected {after_what} before {t.text!r}", t.column)

    # formula ----------------------------------------------------------------------------
    def additive(self) -> float:
        value = self.multiplicative()
        while self.tok.kind == "op" and self.tok.text in "+-":
            op = self.advance()
            rhs = self.multiplicative()
            value = value + rhs if op.text == "+" else value - rhs
            self._finite(value, op)
        return value

    def multiplicative(self) -> float:
        value = self.unary()
        while self.tok.kind == "op" and self.tok.text in "*/":
            op = self.advance()
            rhs = self.unary()
            if op.text == "*":
                value = value * rhs
            else:
                if rhs == 0.0:
                    raise GrammarError("division by zero", op.column)
                value = value / rhs
            self._finite(value, op)
        return value

    def unary(self) -> float:
        # a loop, not recursion: "------1" must not exhaust the stack
        negative = False
        while self.tok.kind == "op" and self.tok.text in "+-":
            negative ^= self.advance().text == "-"
        v = self.primary()
        return -v if negative else v

    def primary(self) -> float:
        t = self.tok
        if t.kind == "num":
            self.advance()
            return t.value
        if t.kind == "pi":
            self.advance()
            return self.pi
        if t.kind == "(":
            self.advance()
            self.depth += 1
            if self.depth > self.max_depth:
                raise GrammarError(f"parentheses nested deeper than {self.max_depth} levels "
                                   f"(ReaderLimits.max_formula_depth)", t.column)
            value = self.additive()
            self.depth -= 1
            if self.tok.kind != ")":
                raise GrammarError("missing ')'" if self.tok.kind == "end" else
                                   f"expected ')' before {self.tok.text!r}", self.tok.column)
            self.advance()
            return value
        if t.kind == "end":
            raise GrammarError("expected a number, 'pi' or '(' but the value ends", t.column)
        if t.kind == "ident":
            hint = " (the constant is lower-case 'pi')" if t.text.lower() == "pi" else ""
            raise GrammarError(f"unknown name {t.text!r}{hint}", t.column)
        raise GrammarError(f"expected a number, 'pi' or '(' before {t.text!r}", t.column)

    @staticmethod
    def _finite(value: float, op: _Token) -> None:
        if not math.isfinite(value):
            raise GrammarError(f"result of {op.text!r} overflows", op.column)

    # rotation ---------------------------------------------------------------------------
    def rotation_product(self) -> NDArray[np.float64]:
        result = self.rotation_term()
        while self.tok.kind == "op" and self.tok.text == "*":
            self.advance()
            result = result @ self.rotation_term()
        self.expect_end("'*'")
        return result

    def rotation_term(self) -> NDArray[np.float64]:
        t = self.tok
        if t.kind != "ident" or t.text not in ("Rx", "Ry", "Rz"):
            what = "the value ends" if t.kind == "end" else f"got {t.text!r}"
            raise GrammarError(f"expected Rx(...), Ry(...) or Rz(...) but {what}", t.column)
        self.advance()
        if self.tok.kind != "(":
            raise GrammarError(f"expected '(' after {t.text}", self.tok.column)
        self.advance()
        angle = self.additive()
        if self.tok.kind != ")":
            raise GrammarError("missing ')'" if self.tok.kind == "end" else
                               f"expected ')' before {self.tok.text!r}", self.tok.column)
        self.advance()
        return axis_rotation(t.text[1], angle)


def axis_rotation(axis: str, angle: float) -> NDArray[np.float64]:
    """3x3 rotation by ``angle`` [rad] about principal axis ``axis`` ("x", "y" or "z")."""
    c, s = math.cos(angle), math.sin(angle)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == "y":
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    if axis == "z":
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"axis must be 'x', 'y' or 'z', got {axis!r}")


def parse_float(text: str) -> float:
    """A plain float: a C literal with an optional sign glued to it (``-3.24E-2``), no padding."""
    if _PLAIN_FLOAT.fullmatch(text) is None:
        raise GrammarError(f"{text!r} is not a floating point number", 1)
    value = float(text)
    if not math.isfinite(value):
        raise GrammarError(f"number {text!r} is out of range", 1)
    return value


def parse_formula(text: str, *, pi: float = math.pi) -> float:
    """Evaluate a floating point formula (numbers, ``pi``, ``( ) + - * /``, unary ``+ -``).

    ``pi`` is the value of the constant (hebi-py uses :data:`HEBI_PI`). Division by zero and
    results that overflow are errors: an HRDF quantity must be finite.
    """
    p = _Parser(text, pi)
    if p.tok.kind == "end":
        raise GrammarError("empty formula", 1)
    value = p.additive()
    p.expect_end()
    return value


def _split_numbers(text: str, count: int, what: str, spaces_only: bool) -> list[float]:
    """``count`` whitespace-separated plain floats; errors carry the column of the bad one."""
    if spaces_only:
        for i, ch in enumerate(text):
            if ch in "\t\r\n":
                raise GrammarError(f"{what} may only be separated by spaces before HRDF 1.1.0 "
                                   f"(found {ch!r})", i + 1)
    words = [(m.group(), m.start() + 1) for m in re.finditer(r"[^ \t\r\n]+", text)]
    values = []
    for word, col in words:
        try:
            values.append(parse_float(word))
        except GrammarError as exc:
            raise GrammarError(exc.message, col) from None
    if len(values) != count:
        raise GrammarError(f"expected {count} whitespace-separated numbers, found {len(values)}")
    return values


def parse_translation(text: str, *, spaces_only: bool = False) -> NDArray[np.float64]:
    """A translation vector: 3 whitespace-separated plain floats [m] (no formulas).

    ``spaces_only`` applies the pre-1.1.0 rule (only spaces separate numbers).
    """
    return np.array(_split_numbers(text, 3, "vector entries", spaces_only))


def check_rotation(R: NDArray[np.float64]) -> None:
    """Reject a 3x3 matrix that is not a proper rotation (hebi-py's tolerance)."""
    err = float(np.linalg.norm(R @ R.T - np.eye(3)))
    det = float(np.linalg.det(R))
    if not err < ROTATION_TOLERANCE or det <= 0.0:
        raise GrammarError(f"not a rotation matrix (|R·Rᵀ − I| = {err:.3g}, det = {det:.6g}; "
                           f"needs orthonormal rows within {ROTATION_TOLERANCE:g} and det = +1)")


def parse_rotation(text: str, *, pi: float = math.pi, functions: bool = True,
                   spaces_only: bool = False) -> NDArray[np.float64]:
    """A rotation matrix: 9 row-major plain floats, or a product of ``Rx/Ry/Rz(formula)``.

    ``functions=False`` applies the pre-1.1.0 rule (matrix form only); ``spaces_only`` the
    pre-1.1.0 whitespace rule. A 9-number matrix is used as written (not re-orthonormalized)
    after checking it is a rotation, as hebi-py does. ``Rx(a)*Ry(b)`` is the matrix product
    ``Rx(a) @ Ry(b)`` (intrinsic x-then-y).
    """
    stripped = text.strip(WHITESPACE)
    if stripped[:1].isalpha():
        if not functions:
            raise GrammarError("Rx/Ry/Rz rotation formulas need HRDF version >= 1.1.0; "
                               "write the 9 matrix entries", text.index(stripped[0]) + 1)
        return _Parser(text, pi).rotation_product()
    values = _split_numbers(text, 9, "matrix entries", spaces_only)
    R = np.array(values).reshape(3, 3)
    check_rotation(R)
    return R
