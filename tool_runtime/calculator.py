"""`builtin::calculator`: arithmetic the model can delegate, offline and exact.

Evaluates + - * / // % ** and parentheses over numbers by walking Python's AST — never `eval` —
with bounds on exponents and on the expression's size. Python's integers are unbounded, so
`((9**999)**999)**999` would compute for hours on whatever event loop runs it: the size of every
integer result is estimated from its operands *before* it is computed and refused past
MAX_RESULT_DIGITS, which keeps each evaluation to microseconds.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

TOOLGROUP_ID = "builtin::calculator"
MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 1000

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"expression": {"type": "string", "description": "An arithmetic expression, e.g. (2 + 3) * 4 / 7"}},
    "required": ["expression"],
}
DESCRIPTION = "Evaluate an arithmetic expression exactly: + - * / // % ** and parentheses."

_BINARY: dict[type[ast.operator], Callable[[Any, Any], int | float | complex]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], int | float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class CalculatorError(ValueError):
    pass


def _magnitude(number: int) -> float:
    """log10 of |number| (0 for 0 and ±1), exact enough for bounding and cheap for any size."""
    return math.log10(abs(number)) if abs(number) > 1 else 0.0


def _result_digits(op: ast.operator, left: int | float, right: int | float) -> float:
    """An upper bound on the decimal digits of an integer result, from its operands alone."""
    if not isinstance(left, int) or not isinstance(right, int):
        return 0.0  # float arithmetic is bounded by the hardware; overflow is caught below
    if isinstance(op, ast.Mult):
        return _magnitude(left) + _magnitude(right) + 1
    if isinstance(op, ast.Pow):
        return _magnitude(left) * right if right > 0 else 0.0
    if isinstance(op, ast.Add | ast.Sub):
        return max(_magnitude(left), _magnitude(right)) + 1
    return 0.0  # / gives a float; // and % are no larger than their left operand


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {right} is larger than {MAX_EXPONENT}")
        if _result_digits(node.op, left, right) > MAX_RESULT_DIGITS:
            raise CalculatorError(f"the result would have more than {MAX_RESULT_DIGITS} digits")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise CalculatorError("division by zero") from exc
        except OverflowError as exc:
            raise CalculatorError("the result is too large for a floating-point number") from exc
        if isinstance(result, complex):
            raise CalculatorError("the result is not a real number")
        return result
    raise CalculatorError(f"unsupported element {ast.dump(node)[:60]}; use numbers, + - * / // % ** and ()")


def calculate(expression: str) -> str:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise CalculatorError(f"not an arithmetic expression: {getattr(exc, 'msg', exc)}") from exc
    except (RecursionError, MemoryError) as exc:
        raise CalculatorError("the expression is nested too deeply") from exc
    try:
        return str(_evaluate(tree.body))
    except RecursionError as exc:
        raise CalculatorError("the expression is nested too deeply") from exc
