"""`builtin::calculator`: arithmetic the model can delegate, offline and exact.

Evaluates + - * / // % ** and parentheses over numbers by walking Python's AST — never `eval` —
with bounds on exponents and on the expression's size.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

TOOLGROUP_ID = "builtin::calculator"
MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 1000

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"expression": {"type": "string", "description": "An arithmetic expression, e.g. (2 + 3) * 4 / 7"}},
    "required": ["expression"],
}
DESCRIPTION = "Evaluate an arithmetic expression exactly: + - * / // % ** and parentheses."

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class CalculatorError(ValueError):
    pass


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {right} is larger than {MAX_EXPONENT}")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise CalculatorError("division by zero") from exc
    raise CalculatorError(f"unsupported element {ast.dump(node)[:60]}; use numbers, + - * / // % ** and ()")


def calculate(expression: str) -> str:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from exc
    return str(_evaluate(tree.body))
