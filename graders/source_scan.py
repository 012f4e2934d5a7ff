"""Best-effort check that a learner's function avoids the library calls a task forbids.

``Rules`` says what is forbidden; ``MATMUL_RULES`` (the default, described here) is the
matmul quest's, and other graders pass their own forbidden names.  Two layers,
both able only to fail a submission, never to pass one:

* a static scan of the source (trusted, nothing runs): the function's definition
  (decorators and defaults included) and every module-level helper it references,
  followed transitively, may not contain

  - the ``@`` / ``@=`` operators, even on vectors (``torch.dot`` is the 1-D tool);
  - any attribute, imported name or string naming a product in ``FORBIDDEN``:
    ``torch.matmul``, ``np.matmul``, ``A.mm(B)``, ``F.linear``, ``operator.matmul``,
    ``from torch import matmul as mul``, ``getattr(torch, "matmul")``;
  - ``dot`` or ``inner`` applied to a whole matrix: a parameter of the graded function
    (or of a helper it passes one to), a local name assigned from one, or either seen
    through ``.T``, ``.t()``, ``.numpy()``, ``.tolist()``, ``np.asarray(...)``, ``X[:, :]``
    and similar, or passed around as a value (``map(np.dot, ...)``).
    ``torch.dot(A[i], B[:, j])`` is exactly what ``matmul_dot`` should do;
  - code the scan cannot see through: ``getattr`` with a computed name, ``eval``,
    ``exec``, ``compile``, ``__import__``, ``globals``, ``vars``, ``setattr``,
    ``importlib`` (also at module level, where it could rebind the function);
  - another graded function: each of the three must compute the product its own way.

  When a name is bound several times, the last unconditional binding and any
  conditional ones after it are scanned (the notebook pattern of redefining a
  function in a later cell).  Top-level code that is not referenced, such as a cell
  comparing against ``A @ B``, is not scanned.  Not caught: a product assembled by
  broadcasting, such as ``(A[:, :, None] * B[None]).sum(1)``, which uses no product op.

* the torch ops the sandbox recorded during each call (untrusted, so only ever used
  to fail): any op whose name has a component in ``FORBIDDEN`` (``aten::mm``,
  ``torch.matmul``, ``Tensor.__matmul__``).  A 1-D ``dot`` is allowed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

FORBIDDEN = frozenset(
    {
        "matmul",
        "mm",
        "bmm",
        "mv",
        "addmm",
        "addmv",
        "addbmm",
        "baddbmm",
        "einsum",
        "tensordot",
        "linear",
        "multi_dot",
        "chain_matmul",
        "__matmul__",
        "__rmatmul__",
        "__imatmul__",
    }
)
DOT_NAMES = frozenset({"dot", "inner"})
DYNAMIC = frozenset({"eval", "exec", "compile", "__import__", "globals", "vars", "setattr"})
DYNAMIC_MODULES = frozenset({"importlib"})
#: attribute views, methods and module functions that keep a whole matrix a whole matrix
WHOLE_VIEWS = frozenset({"T", "mT", "H", "mH", "data"})
WHOLE_METHODS = frozenset(
    {"t", "numpy", "tolist", "contiguous", "clone", "detach", "double", "float", "to", "cpu"}
    | {"transpose", "permute", "copy", "astype", "type"}
)
WHOLE_FUNCTIONS = frozenset(
    {"asarray", "array", "as_tensor", "tensor", "from_numpy", "t", "transpose", "clone"}
    | {"ascontiguousarray"}
)

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class Rules:
    """What one task forbids, and how to name it in feedback."""

    forbidden: frozenset[str]
    what: str = "a whole-matrix product"  # "X is <what>"
    matmul_operator: bool = True  # flag ``@`` and ``@=``
    whole_dot: bool = True  # flag ``dot``/``inner`` applied to a whole parameter
    independent: bool = True  # graded functions may not use one another


MATMUL_RULES = Rules(FORBIDDEN)


@dataclass(frozen=True)
class Finding:
    line: int
    code: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line} `{self.code}`: {self.reason}"


@dataclass(frozen=True)
class ScanReport:
    """What the static scan found for one function.

    ``found`` is False when no top-level binding of the name exists; ``problem`` is set
    when the source could not be analysed at all.
    """

    found: bool
    findings: tuple[Finding, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class _Binding:
    node: ast.AST  # a def/class/lambda, an assigned expression, or an import statement
    conditional: bool
    qualname: str = ""  # for imports: the dotted name bound


@dataclass(frozen=True)
class _Task:
    binding: _Binding
    whole: frozenset[str] | None  # parameter names holding whole matrices; None: all of them


def forbidden_ops(ops: Iterable[str], forbidden: frozenset[str] = FORBIDDEN) -> tuple[str, ...]:
    """The recorded op names with a forbidden component, e.g. ``aten::mm.default``."""
    return tuple(sorted({op for op in ops if _components(op) & forbidden}))


def scan(
    source: str, functions: Sequence[str], rules: Rules = MATMUL_RULES
) -> dict[str, ScanReport]:
    """Scan each named function of a submission; never raises on hostile input."""
    try:
        module = _Module(ast.parse(source), source.splitlines(), tuple(functions), rules)
        return {name: module.report(name) for name in functions}
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # the parser's limits
        problem = f"the grader could not analyse the file ({type(exc).__name__})"
        return dict.fromkeys(functions, ScanReport(found=False, problem=problem))


def _components(name: str) -> set[str]:
    return set(re.split(r"[.:]+", name.lower()))


def _target_names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _shallow_walk(node: ast.AST) -> Iterator[ast.AST]:
    """Like ``ast.walk`` but without entering nested functions, classes or lambdas."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in ast.iter_child_nodes(current) if not isinstance(c, _SCOPE_NODES))


def _params(node: ast.AST) -> list[str]:
    if not isinstance(node, _FUNCTION_NODES):
        return []
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def _is_full_slice(index: ast.AST) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None
        for p in parts
    )


def _viewed(node: ast.expr) -> ast.expr | None:
    """``X`` for ``X.T``, ``X.mT``, ``X[:, :]`` and the like, which are all of ``X``."""
    if isinstance(node, ast.Attribute) and node.attr in WHOLE_VIEWS:
        return node.value
    if isinstance(node, ast.Subscript) and _is_full_slice(node.slice):
        return node.value
    return None


class _Module:
    """The module-level bindings of one submission and the scan that follows them."""

    def __init__(
        self, tree: ast.Module, lines: list[str], interface: tuple[str, ...], rules: Rules
    ) -> None:
        self.lines = lines
        self.interface = interface if rules.independent else ()
        self.rules = rules
        self.forbidden = rules.forbidden
        self.bindings: dict[str, list[_Binding]] = {}
        self.imported = {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        self.module_findings: list[Finding] = []
        self._collect(tree.body, conditional=False)

    # -- collecting bindings ------------------------------------------------------------

    def _bind(self, name: str, node: ast.AST, conditional: bool, qualname: str = "") -> None:
        self.bindings.setdefault(name, []).append(_Binding(node, conditional, qualname))

    def _collect(self, body: list[ast.stmt], conditional: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self._bind(stmt.name, stmt, conditional)
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Global):
                        for name in node.names:
                            self._bind(name, stmt, conditional=True)
                continue
            self.module_findings += self._dynamic_findings(_shallow_walk(stmt))
            self._collect_statement(stmt, conditional)

    def _collect_statement(self, stmt: ast.stmt, conditional: bool) -> None:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in _target_names(target):
                    self._bind(name, stmt.value, conditional)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            for name in _target_names(stmt.target):
                self._bind(name, stmt.value, conditional)
        elif isinstance(stmt, ast.AugAssign):
            for name in _target_names(stmt.target):
                self._bind(name, stmt, conditional)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                qualname = alias.name if alias.asname else alias.name.split(".")[0]
                self._bind(alias.asname or qualname, stmt, conditional, qualname)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                qualname = f"{stmt.module or ''}.{alias.name}"
                self._bind(alias.asname or alias.name, stmt, conditional, qualname)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            for name in _target_names(stmt.target):
                self._bind(name, stmt.iter, conditional=True)
            self._collect(stmt.body + stmt.orelse, conditional=True)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None:
                    for name in _target_names(item.optional_vars):
                        self._bind(name, item.context_expr, conditional)
            self._collect(stmt.body, conditional)
        elif isinstance(stmt, ast.If | ast.While):
            self._collect(stmt.body + stmt.orelse, conditional=True)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            handlers = [s for h in stmt.handlers for s in h.body]
            self._collect(stmt.body + handlers + stmt.orelse + stmt.finalbody, conditional=True)
        elif isinstance(stmt, ast.Match):
            self._collect([s for case in stmt.cases for s in case.body], conditional=True)

    def _effective(self, name: str) -> list[_Binding]:
        """The bindings that may be live at the end of the module."""
        bindings = self.bindings.get(name, [])
        unconditional = [i for i, b in enumerate(bindings) if not b.conditional]
        return bindings[unconditional[-1] :] if unconditional else bindings

    # -- scanning -----------------------------------------------------------------------

    def report(self, name: str) -> ScanReport:
        effective = self._effective(name)
        if not effective:
            return ScanReport(found=False)
        findings = set(self.module_findings)
        todo = [_Task(b, None) for b in effective]
        seen: set[tuple[int, frozenset[str] | None]] = set()
        while todo:
            task = todo.pop()
            key = (id(task.binding.node), task.whole)
            if key not in seen:
                seen.add(key)
                findings.update(self._scan_task(task, name, todo))
        ordered = sorted(findings, key=lambda f: (f.line, f.reason))
        return ScanReport(found=True, findings=tuple(ordered))

    def _finding(self, node: ast.AST, reason: str) -> Finding:
        line = getattr(node, "lineno", 0)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return Finding(line, code[:77] + "..." if len(code) > 80 else code, reason)

    def _scan_task(self, task: _Task, graded: str, todo: list[_Task]) -> list[Finding]:
        node = task.binding.node
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound = task.binding.qualname
            if _components(bound) & self.forbidden:
                return [self._finding(node, f"imports {bound}, {self.rules.what}")]
            return []
        if isinstance(node, ast.Name) and task.whole is None:  # an alias: f = helper
            if node.id in self.interface and node.id != graded:
                return [self._finding(node, f"uses {node.id}: each function must work on its own")]
            todo.extend(_Task(b, None) for b in self._effective(node.id))
            return []
        params = _params(node)
        whole = set(params if task.whole is None else task.whole)
        local = set(params) | {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        self._spread_whole(node, whole)
        called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        findings: list[Finding] = []
        for sub in ast.walk(node):
            findings += self._check_node(sub, graded, whole, local, called, todo)
        return findings

    def _spread_whole(self, scope: ast.AST, whole: set[str]) -> None:
        """Add local names assigned from a whole matrix, until nothing changes."""
        assigns = [n for n in ast.walk(scope) if isinstance(n, ast.Assign)]
        changed = True
        while changed:
            changed = False
            for assign in assigns:
                if self._is_whole(assign.value, whole):
                    new = {n for t in assign.targets for n in _target_names(t)} - whole
                    whole |= new
                    changed = changed or bool(new)

    def _check_node(
        self,
        node: ast.AST,
        graded: str,
        whole: set[str],
        local: set[str],
        called: set[int],
        todo: list[_Task],
    ) -> list[Finding]:
        matmul = isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult)
        if matmul and self.rules.matmul_operator:
            return [self._finding(node, "the @ operator is a matrix product")]
        if isinstance(node, ast.Attribute):
            return self._check_attribute(node, called)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            return [] if node.id in local else self._check_name(node, graded, called, todo)
        if isinstance(node, ast.Call):
            return self._check_call(node, whole, local, todo)
        if isinstance(node, ast.Constant) and node.value in self.forbidden:
            return [self._finding(node, f"the string {node.value!r} names {self.rules.what}")]
        if isinstance(node, ast.ImportFrom):
            names = sorted({a.name for a in node.names} & self.forbidden)
            return [self._finding(node, f"imports {n}, {self.rules.what}") for n in names]
        return []

    def _check_attribute(self, node: ast.Attribute, called: set[int]) -> list[Finding]:
        if node.attr in self.forbidden:
            return [self._finding(node, f"{node.attr} is {self.rules.what}")]
        if self.rules.whole_dot and node.attr in DOT_NAMES and id(node) not in called:
            reason = f"passes {node.attr} around, so its inputs can't be checked"
            return [self._finding(node, reason)]
        return []

    def _check_name(
        self, node: ast.Name, graded: str, called: set[int], todo: list[_Task]
    ) -> list[Finding]:
        name = node.id
        if name in self.interface and name != graded and name in self.bindings:
            return [self._finding(node, f"uses {name}: each function must work on its own")]
        if name in DYNAMIC or name in DYNAMIC_MODULES:
            return [self._finding(node, f"{name} runs or finds code the grader cannot see")]
        if name in self.bindings:
            if id(node) not in called:  # a decorator, or a helper passed around: scan it too
                todo.extend(_Task(b, frozenset()) for b in self._effective(name))
            return []
        if name in self.forbidden:
            return [self._finding(node, f"{name} is {self.rules.what}")]
        if self.rules.whole_dot and name in DOT_NAMES and id(node) not in called:
            return [self._finding(node, f"passes {name} around, so its inputs can't be checked")]
        return []

    def _check_call(
        self, node: ast.Call, whole: set[str], local: set[str], todo: list[_Task]
    ) -> list[Finding]:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            key = node.args[1]
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return [self._finding(node, "getattr with a computed name hides what is called")]
        callee = self._callee_name(func)
        if self.rules.whole_dot and callee in DOT_NAMES:
            operands = list(node.args)
            if isinstance(func, ast.Attribute) and not self._is_module(func.value):
                operands.append(func.value)
            if any(self._is_whole(op, whole) for op in operands):
                reason = f"{callee} of whole matrices is a matrix product; use a row and a column"
                return [self._finding(node, reason)]
        if isinstance(func, ast.Name) and func.id not in local:
            for binding in self._effective(func.id):
                todo.append(_Task(binding, self._whole_params(binding.node, node, whole)))
        return []

    def _callee_name(self, func: ast.expr) -> str:
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            bound = self._effective(func.id)
            if bound and bound[-1].qualname:
                return bound[-1].qualname.rsplit(".", 1)[-1]
            return func.id
        return ""

    def _whole_params(self, callee: ast.AST, call: ast.Call, whole: set[str]) -> frozenset[str]:
        """The helper's parameters that receive a whole matrix at this call."""
        params = _params(callee)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return frozenset(params)
        result = {p for p, a in zip(params, call.args, strict=False) if self._is_whole(a, whole)}
        result |= {k.arg for k in call.keywords if k.arg and self._is_whole(k.value, whole)}
        return frozenset(result)

    def _is_module(self, node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.imported

    def _is_whole(self, node: ast.expr, whole: set[str]) -> bool:
        """Whether an expression is a whole matrix (a parameter, possibly transposed or copied)."""
        while True:
            if isinstance(node, ast.Name):
                return node.id in whole
            viewed = _viewed(node)
            if viewed is not None:
                node = viewed
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                func = node.func
                if self._is_module(func.value):
                    if func.attr not in WHOLE_FUNCTIONS or not node.args:
                        return False
                    node = node.args[0]
                elif func.attr in WHOLE_METHODS:
                    node = func.value
                else:
                    return False
            else:
                return False

    def _dynamic_findings(self, nodes: Iterable[ast.AST]) -> list[Finding]:
        return [
            self._finding(n, f"{n.id} runs or finds code the grader cannot see")
            for n in nodes
            if isinstance(n, ast.Name) and (n.id in DYNAMIC or n.id in DYNAMIC_MODULES)
        ]
