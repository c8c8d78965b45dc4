"""Uses of the runtime's launcher internals, tied to the class member they reach (rule TRI021).

Libraries wrap and subclass ``JITFunction``, ``KernelInterface``, ``Autotuner``, ``Heuristics``
and read ``CompiledKernel`` fields. The API census records each of these classes' members per
release (``api_surface.DEEP_FILES``: methods with their signatures, private ones included, and
the attributes their methods set on ``self``), so each use is decided by the census of the
candidate: the member absent breaks, a call its signature refuses breaks, otherwise it works.

What is matched (the class spellings are the rule's ``names``):

- a class of the scanned tree subclassing one of them: each method it overrides
  (``def run(self, *args, **kwargs)``) that the base defines on some release, each
  ``super().m(...)`` call (with its keywords and positional count; ``__init__`` is the class's
  own signature), and each ``self.a`` read in its methods that the base has on some release and
  the subclass does not set itself;
- a kernel of the file (``@triton.jit``, ``@triton.autotune``, ``@triton.heuristics``):
  ``kernel.cache``, ``kernel.device_caches``, ``kernel.warmup(...)``, ``kernel.run(...)``
  (keywords checked), through the class of its outermost decorator;
- a host function's parameter that holds such a kernel (its default, or a call in the file
  passing one): ``def print_ptx(kernel): kernel.cache[0]`` with ``print_ptx(copy_kernel)``;
- what a launch or ``warmup`` returns (``c = kernel[grid](...)``): ``c.n_regs``,
  ``c.metadata``, ``c.asm`` are ``CompiledKernel`` members.

A member no recorded release has (``__name__``, a subclass's own) is no Triton member and is
left alone. Names are resolved with the census's own ``resolve``, so any re-export works.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from matrix.scan.imports import Module
from matrix.scan.rules import Rule

JIT = "triton.runtime.jit.JITFunction"
AUTOTUNER = "triton.runtime.autotuner.Autotuner"
HEURISTICS = "triton.runtime.autotuner.Heuristics"
COMPILED = "triton.compiler.compiler.CompiledKernel"
# The class a decorator makes of a function (the outermost decorator wins).
DECORATOR_CLASS = {"jit": JIT, "autotune": AUTOTUNER, "heuristics": HEURISTICS}


def _census_has(module: Module, qualname: str) -> bool:
    """Whether any recorded release has ``qualname`` (a member of a Triton class)."""
    censuses = getattr(module, "censuses", None) or {}
    return any(c.status(qualname) == "present" for c in censuses.values())


def _base_class(module: Module, base: ast.expr, rule: Rule) -> str | None:
    q = module.imports.qualname(base) or ""
    return q if q in rule.names else None


def _kernel_classes(module: Module) -> dict[str, str]:
    """``{kernel name: the class its outermost Triton decorator makes}``."""
    out: dict[str, str] = {}
    for fn in module.kernels:
        for deco in fn.decorator_list:  # outermost first
            target = deco.func if isinstance(deco, ast.Call) else deco
            q = module.imports.qualname(target) or ""
            last = q.rsplit(".", 1)[-1]
            if q.startswith("triton.") and last in DECORATOR_CLASS:
                out[fn.name] = DECORATOR_CLASS[last]
                break
    return out


def _self_assigned(cls: ast.ClassDef) -> set[str]:
    return {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def _subclass_uses(module: Module, rule: Rule) -> Iterator[tuple[ast.AST, str, str]]:
    for cls in (n for n in module.nodes if isinstance(n, ast.ClassDef)):
        bases = [b for b in (_base_class(module, x, rule) for x in cls.bases) if b]
        if not bases:
            continue
        base = bases[0]
        own = _self_assigned(cls)
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                member = f"{base}.{item.name}"
                if item.name != "__init__" and _census_has(module, member):
                    yield item, member, f"{cls.name}.{item.name} overrides {member}"
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                inner = node.func.value
                is_super = (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Name)
                    and inner.func.id == "super"
                )
                if is_super:
                    name = node.func.attr
                    member = base if name == "__init__" else f"{base}.{name}"
                    if name == "__init__" or _census_has(module, member):
                        yield node, member, f"super().{name}(...) in {cls.name}"
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr not in own
            ):
                member = f"{base}.{node.attr}"
                if _census_has(module, member):
                    yield node, member, f"self.{node.attr} in {cls.name}"


def _launch_results(module: Module, kernels: dict[str, str]) -> set[str]:
    """Names bound to what a kernel's launch or warmup returns (a CompiledKernel)."""
    out: set[str] = set()
    for node in module.nodes:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        launched = (
            isinstance(func, ast.Subscript)
            and isinstance(func.value, ast.Name)
            and func.value.id in kernels
        )
        warmed = (
            isinstance(func, ast.Attribute)
            and func.attr == "warmup"
            and isinstance(func.value, ast.Name)
            and func.value.id in kernels
        )
        if launched or warmed:
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _kernel_params(module: Module, kernels: dict[str, str]) -> dict[int, dict[str, str]]:
    """``{id(host function): {parameter: class}}`` for parameters that hold a kernel of the
    file: its default (``def dump(kernel=copy_kernel)``), or a call of the function in the file
    that passes one (``print_ptx("copy", copy_kernel)``, by position or keyword). Helpers that
    take "a kernel" and read ``kernel.cache`` are how real code reaches these members."""
    defs = {
        n.name: n
        for n in module.nodes
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name not in kernels
    }
    out: dict[int, dict[str, str]] = {}

    def bind(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str, value: ast.expr) -> None:
        if isinstance(value, ast.Name) and value.id in kernels:
            out.setdefault(id(fn), {}).setdefault(param, kernels[value.id])

    for fn in defs.values():
        positional = [*fn.args.posonlyargs, *fn.args.args]
        defaulted = positional[len(positional) - len(fn.args.defaults) :]
        for arg, default in zip(defaulted, fn.args.defaults, strict=True):
            bind(fn, arg.arg, default)
        for arg, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            if kw_default is not None:
                bind(fn, arg.arg, kw_default)
    for call in (n for n in module.nodes if isinstance(n, ast.Call)):
        callee = defs.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if callee is None:
            continue
        names = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
        for name, value in zip(names, call.args, strict=False):  # *args: extra values
            bind(callee, name, value)
        for kw in call.keywords:
            if kw.arg is not None:
                bind(callee, kw.arg, kw.value)
    return out


def _member_use(
    module: Module, node: ast.Attribute, owner: str, cls: str
) -> Iterator[tuple[ast.AST, str, str]]:
    member = f"{cls}.{node.attr}"
    if _census_has(module, member):
        yield node, member, f"{owner}.{node.attr} ({cls.rsplit('.', 1)[-1]}.{node.attr})"


def _value_uses(module: Module) -> Iterator[tuple[ast.AST, str, str]]:
    kernels = _kernel_classes(module)
    if not kernels:
        return
    compiled = _launch_results(module, kernels)
    params = _kernel_params(module, kernels)
    for node in module.nodes:
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if module.in_kernel(node):
            continue
        owner = node.value.id
        cls = kernels.get(owner) or (COMPILED if owner in compiled else None)
        if cls is not None:
            yield from _member_use(module, node, owner, cls)
    for fn in (n for n in module.nodes if id(n) in params):
        held = params[id(fn)]
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in held
                and node.value.id not in kernels  # a kernel's own name: yielded above
            ):
                yield from _member_use(module, node, node.value.id, held[node.value.id])


def match_runtime_member(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Uses of a runtime class's members (see the module docstring); the member's qualname is
    kept in ``module.qualnames`` for the census to decide per release."""
    if not getattr(module, "censuses", None):
        return  # only the census knows the members: without one there is nothing to tie to
    parents = {id(n.func): n for n in module.nodes if isinstance(n, ast.Call)}
    for node, member, text in (*_subclass_uses(module, rule), *_value_uses(module)):
        call = parents.get(id(node))
        target: ast.AST = call if call is not None else node
        module.qualnames[id(target)] = member
        yield target, text
