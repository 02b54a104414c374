"""Mutants of a reference solution: the wrong code a learner writes.

``mutants(source)`` returns ``Mutant(kind, where, source)`` objects, one small
change each, made on the syntax tree (so a mutant is the solution with exactly
one thing wrong, whatever its formatting). The kinds:

- ``mask removed``: a ``mask=`` of a ``tl.load`` or ``tl.store`` dropped;
- ``mask loosened``: a ``<`` in a kernel made ``<=``;
- ``other dropped``: a ``tl.load``'s ``other=`` dropped (masked-off lanes are
  then undefined), or an ``other=-inf`` made ``0.0``;
- ``stride replaced``: a ``t.stride(i)`` that a launcher passes replaced by
  ``t.shape[i]``, by another stride the launcher passes of the same tensor,
  or by another tensor's stride of the same dimension;
- ``size hard-coded``: a ``triton.next_power_of_2(n)`` made 4096 (the row
  length of the GPU targets);
- ``grid shrunk``: a grid dimension ``triton.cdiv(n, b)`` made ``n // b``, any
  other made one smaller;
- ``grid by the wrong dimension``: a size in the grid replaced by another size
  the launcher takes from a shape (rows by columns, M by N or K);
- ``accumulator in the input dtype``: a ``tl.float32`` given to ``tl.zeros``
  or ``tl.full`` made the first pointer's element type, or a
  ``.to(tl.float32)`` dropped;
- ``guard dropped``: ``tl.where(c, a, b)`` made ``b``; ``z - tl.max(z)`` made
  ``z`` (the overflow shift); a launcher's ``if`` around a launch made
  ``if True``; an early ``return`` (for empty inputs) removed;
- ``rescale dropped``: ``s * tl.exp(...)`` made ``s``;
- ``contiguity check dropped``: a launcher's ``if ...: raise`` that tests
  contiguity or strides removed, or one such operand of its ``and``/``or``
  (checks of shapes and dtypes are left: the tasks give matching inputs);
- ``precision dropped``: ``input_precision=`` of a ``tl.dot`` dropped (TF32);
- in a file without kernels (a test to write, such as a detector):
  ``constant changed`` (an integer above 1 one more, one less), ``logic
  inverted`` (``not`` dropped, ``all`` made ``any``) and ``guard not
  poisoned`` (``torch.full(..., nan)`` made ``torch.empty(...)``).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Callable, Iterator


@dataclasses.dataclass(frozen=True)
class Mutant:
    kind: str
    where: str  # "line N: what changed"
    source: str


# edit(node) changes a copy of the node in place and returns what replaces it
Edit = Callable[[ast.AST], ast.AST]
Site = tuple[str, ast.AST, str, Edit]  # kind, node, what changes, edit


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _call_name(node: ast.AST) -> str:
    return _text(node.func) if isinstance(node, ast.Call) else ""


def _method(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
    )


def _kw(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _expr(text: str) -> ast.AST:
    return ast.parse(text, mode="eval").body


def _drop_kw(name: str) -> Edit:
    def edit(call):
        call.keywords = [k for k in call.keywords if k.arg != name]
        return call

    return edit


def _set_kw(name: str, text: str) -> Edit:
    def edit(call):
        _kw(call, name).value = _expr(text)
        return call

    return edit


def _to(text: str) -> Edit:
    return lambda node: _expr(text)


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in _text(d) for d in fn.decorator_list)


def _sites(tree: ast.Module) -> Iterator[Site]:
    functions = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    kernels = {f.name for f in functions if _is_jit(f)}
    for fn in functions:
        if fn.name in kernels:
            yield from _kernel_sites(fn)
        elif kernels:
            yield from _launcher_sites(fn, kernels)
        else:
            yield from _plain_sites(fn)


def _kernel_sites(fn: ast.FunctionDef) -> Iterator[Site]:
    pointer = next((a.arg for a in fn.args.args if a.arg.endswith("_ptr")), None)
    for node in ast.walk(fn):
        name = _call_name(node)
        if name in ("tl.load", "tl.store"):
            if _kw(node, "mask"):
                yield "mask removed", node, f"{name} without mask=", _drop_kw("mask")
            other = _kw(node, "other")
            if other:
                yield "other dropped", node, "no other=", _drop_kw("other")
                if "inf" in _text(other.value):
                    yield "other dropped", node, "other=0.0", _set_kw("other", "0.0")
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Lt):
            yield "mask loosened", node, _text(node).replace(" < ", " <= ", 1), _loosen
        elif name == "tl.where" and len(node.args) == 3:
            what = f"{_text(node)} -> {_text(node.args[2])}"
            yield "guard dropped", node, what, lambda n: n.args[2]
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Sub)
            and _call_name(node.right) == "tl.max"
        ):
            what = f"{_text(node)} -> {_text(node.left)}"
            yield "guard dropped", node, what, lambda n: n.left
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for keep, other in (("left", "right"), ("right", "left")):
                if _call_name(getattr(node, other)) == "tl.exp":
                    what = f"{_text(node)} -> {_text(getattr(node, keep))}"
                    yield (
                        "rescale dropped",
                        node,
                        what,
                        (lambda n, keep=keep: getattr(n, keep)),
                    )
        elif name in ("tl.zeros", "tl.full") and pointer:
            dtype = _kw(node, "dtype")
            given = dtype.value if dtype else node.args[-1]
            if _text(given) == "tl.float32":
                narrow = f"{pointer}.dtype.element_ty"
                yield (
                    "accumulator in the input dtype",
                    node,
                    f"{name}(..., {narrow})",
                    (lambda n, narrow=narrow: _with_dtype(n, narrow)),
                )
        elif _method(node, "to") and [_text(a) for a in node.args] == ["tl.float32"]:
            what = f"{_text(node)} -> {_text(node.func.value)}"
            yield "accumulator in the input dtype", node, what, lambda n: n.func.value
        elif name == "tl.dot" and _kw(node, "input_precision"):
            what = "tl.dot without input_precision="
            yield "precision dropped", node, what, _drop_kw("input_precision")


def _loosen(node: ast.Compare) -> ast.Compare:
    node.ops = [ast.LtE(), *node.ops[1:]]
    return node


def _with_dtype(call: ast.Call, text: str) -> ast.Call:
    dtype = _kw(call, "dtype")
    if dtype:
        dtype.value = _expr(text)
    else:
        call.args[-1] = _expr(text)
    return call


def _sizes(fn: ast.FunctionDef) -> list[str]:
    """Names the launcher binds to sizes: ``rows, cols = x.shape``,
    ``N = b.shape[1]``, ``n = x.numel()``."""
    names = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            value, target = _text(node.value), node.targets[0]
            if ".shape" in value or ".numel()" in value:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names += [e.id for e in elts if isinstance(e, ast.Name)]
    return names


def _grid_elements(fn: ast.FunctionDef, kernels: set[str]) -> list[ast.AST]:
    """The dimensions of every grid the launcher launches with: written in
    ``kernel[(...)]`` or in a tuple assigned to a name used there."""
    tuples = {
        t.id: node.value
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and _text(node.value) in kernels:
            grid = node.slice
            if isinstance(grid, ast.Name):
                grid = tuples.get(grid.id)
            if isinstance(grid, ast.Tuple):
                found += grid.elts
    return found


def _launcher_sites(fn: ast.FunctionDef, kernels: set[str]) -> Iterator[Site]:
    passed = sorted(
        {
            (_text(n.func.value), _text(n.args[0]))
            for n in ast.walk(fn)
            if _method(n, "stride") and len(n.args) == 1
        }
    )
    for node in ast.walk(fn):
        if _method(node, "stride") and len(node.args) == 1:
            t, i = _text(node.func.value), _text(node.args[0])
            options = [f"{t}.shape[{i}]"]
            options += [f"{u}.stride({j})" for u, j in passed if u == t and j != i]
            options += [f"{u}.stride({j})" for u, j in passed if u != t and j == i]
            for text in options:
                yield "stride replaced", node, f"{t}.stride({i}) -> {text}", _to(text)
        elif _call_name(node) == "triton.next_power_of_2":
            yield "size hard-coded", node, f"{_text(node)} -> 4096", _to("4096")
        elif isinstance(node, ast.If):
            yield from _if_sites(node, kernels)
    sizes = _sizes(fn)
    for element in _grid_elements(fn, kernels):
        text = _text(element)
        if _call_name(element) == "triton.cdiv":
            a, b = (_text(x) for x in element.args)
            yield "grid shrunk", element, f"{text} -> {a} // {b}", _to(f"{a} // {b}")
        else:
            yield "grid shrunk", element, f"{text} -> {text} - 1", _to(f"{text} - 1")
        used = {n.id for n in ast.walk(element) if isinstance(n, ast.Name)}
        for name in sorted(used & set(sizes)):
            for other in sizes:
                if other != name:
                    yield (
                        "grid by the wrong dimension",
                        element,
                        (f"{text}: {name} -> {other}"),
                        lambda n, name=name, other=other: _rename(n, name, other),
                    )


def _rename(node: ast.AST, name: str, other: str) -> ast.AST:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == name:
            sub.id = other
    return node


def _about_layout(node: ast.AST) -> bool:
    return "contiguous" in _text(node) or "stride" in _text(node)


def _if_sites(node: ast.If, kernels: set[str]) -> Iterator[Site]:
    test = _text(node.test)
    if any(isinstance(s, ast.Raise) for s in node.body):
        if not _about_layout(node.test):
            return
        kind = "contiguity check dropped"
        yield kind, node, f"if {test}: raise", lambda n: ast.Pass()
        for place, value in _check_parts(node.test):
            if _about_layout(value) and not isinstance(value, ast.BoolOp):
                yield (
                    kind,
                    node,
                    f"'{_text(value)}' dropped from the check",
                    (lambda n, place=place: _drop_part(n, place)),
                )
    elif any(isinstance(s, ast.Return) for s in node.body):
        yield "guard dropped", node, f"if {test}: return", lambda n: ast.Pass()
    elif any(
        isinstance(s, ast.Subscript) and _text(s.value) in kernels
        for s in ast.walk(node)
    ):
        yield "guard dropped", node, f"if {test} -> if True", _always


def _always(node: ast.If) -> ast.If:
    node.test = ast.Constant(True)
    return node


def _check_parts(test: ast.AST, path: tuple = ()):
    """(path, operand) of each operand of the ``and``/``or`` chains of an
    input check, through ``not``: ``not (a and b)`` has a and b."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _check_parts(test.operand, (*path, "operand"))
    elif isinstance(test, ast.BoolOp):
        for k, value in enumerate(test.values):
            yield (*path, k), value
            yield from _check_parts(value, (*path, k))


def _drop_part(node: ast.If, place: tuple) -> ast.If:
    """Remove the operand at ``place`` from its ``and``/``or`` chain."""
    owner, field, chain = node, "test", node.test
    for step in place[:-1]:
        owner, field = chain, step
        chain = chain.operand if step == "operand" else chain.values[step]
    values = [v for k, v in enumerate(chain.values) if k != place[-1]]
    if len(values) > 1:
        chain.values = values
    elif isinstance(field, int):
        owner.values[field] = values[0]
    else:
        setattr(owner, field, values[0])  # "test" or "operand"
    return node


def _plain_sites(fn: ast.FunctionDef) -> Iterator[Site]:
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if node.value > 1:
                for value in (node.value - 1, node.value + 1):
                    yield (
                        "constant changed",
                        node,
                        f"{node.value} -> {value}",
                        (lambda n, value=value: ast.Constant(value)),
                    )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "logic inverted", node, "not dropped", lambda n: n.operand
        elif isinstance(node, ast.Attribute) and node.attr in ("all", "any"):
            swap = "any" if node.attr == "all" else "all"
            yield (
                "logic inverted",
                node,
                f".{node.attr}() -> .{swap}()",
                (lambda n, swap=swap: _renamed_attr(n, swap)),
            )
        elif _call_name(node) == "torch.full" and "nan" in _text(node):
            empty = f"torch.empty({_text(node.args[0])})"
            yield "guard not poisoned", node, empty, _to(empty)


def _renamed_attr(node: ast.Attribute, attr: str) -> ast.Attribute:
    node.attr = attr
    return node


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source``, one change each, without duplicates."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    found, seen = [], {ast.unparse(tree)}
    for kind, node, what, edit in _sites(tree):
        copied = copy.deepcopy(tree)
        target = list(ast.walk(copied))[nodes.index(node)]  # same walk order
        new = edit(target)
        if new is not target:
            _put(copied, target, new)
        mutated = ast.unparse(ast.fix_missing_locations(copied))
        if mutated not in seen:
            seen.add(mutated)
            found.append(Mutant(kind, f"line {node.lineno}: {what}", mutated))
    return found


def _put(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put ``new`` where ``old`` is in ``tree``."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                setattr(parent, field, [new if v is old else v for v in value])
                return
    raise ValueError("node not found in the tree")
