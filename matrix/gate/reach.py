"""Kernels nothing in the team's repository reaches: where a "may affect" finding has nothing
to be decided by.

A "may affect" use waits on a launch to say its dtype. A kernel that no code of the repository
names, or names only inside functions that nothing names in turn (a vendored ``chunk_bwd_dv``
no module calls or imports, a backward kernel no wrapper launches), has no launch to wait on:
the upgrade cannot change what the team runs through it. Its "may affect" uses are set aside
with a note, never blocking; what its code does by itself (a removed API, a typed op) is judged
as before.

What counts as naming: the name as a word in any file of the repositories above ``--scan``
that targets.toml ``[interpret] files`` lists (tests, notebooks, docs, CI files included; not
in a ``#`` comment of the ``[interpret] comment_files``: commented-out code calls nothing), at
module level, in a class (a method: run by a framework), inside a decorated function
(registered: ``@torch.library.custom_op``) or a ``test*`` function (pytest runs it), or in any
file outside the scanned ones. Only a
mention inside an undecorated function of the scanned files that is itself unreached (its own
name is mentioned only inside itself or other unreached functions) does not count. Fail
closed: a walk cut short at ``[interpret] max_files``, or a file that cannot be read, leaves
every kernel reached.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from matrix.gate.targets import Rule, repository_root, searched_files

WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")  # an identifier, in a file's bytes
Function = ast.FunctionDef | ast.AsyncFunctionDef


class Reach:
    """Which kernels of the scanned files nothing reaches, computed once, on first ask."""

    def __init__(
        self,
        scan: Sequence[str],
        trees: Mapping[str, ast.Module],
        kernels: Mapping[str, Iterable[Function]],
        shown: Mapping[str, str],
    ) -> None:
        self._scan = list(scan)
        self._trees = dict(trees)  # resolved path -> parsed tree (the scanned files)
        self._kernels = {p: {id(f) for f in fs} for p, fs in kernels.items()}
        self._shown = dict(shown)  # resolved path -> the path uses show
        self._unreached: frozenset[tuple[str, str]] | None = None

    def unreached(self, path: str, kernel: str) -> bool:
        """Whether kernel ``kernel`` of the file shown as ``path`` is reached by nothing."""
        if self._unreached is None:
            self._unreached = self._compute()
        return (path, kernel) in self._unreached

    def _compute(self) -> frozenset[tuple[str, str]]:
        # candidates, per file: its module-level undecorated functions and its kernels (a
        # mention inside one counts only while that one is reached)
        by_path = {
            path: [
                node for node in tree.body
                if isinstance(node, Function) and not node.name.startswith("test")  # (pytest's)
                and (id(node) in self._kernels.get(path, set()) or not node.decorator_list)
            ]
            for path, tree in self._trees.items()
        }  # fmt: skip
        names = {node.name for nodes in by_path.values() for node in nodes}
        if not names or not self._scan:
            return frozenset()
        mentions = _mentions(self._scan, names)
        if mentions is None:
            return frozenset()  # fail closed: the walk was cut short or a file was unreadable
        dead: set[int] = set()  # ids of unreached definitions

        def inside_dead(path: str, line: int) -> bool:
            return any(id(d) in dead and _spans(d, line) for d in by_path.get(path, ()))

        changed = True
        while changed:
            changed = False
            for path, nodes in by_path.items():
                for node in nodes:
                    if id(node) in dead:
                        continue
                    outside = [(p, n) for p, n in mentions.get(node.name, [])
                               if not (p == path and _spans(node, n))]  # fmt: skip
                    if all(inside_dead(p, n) for p, n in outside):
                        dead.add(id(node))
                        changed = True
        return frozenset(
            (self._shown.get(path, path), node.name)
            for path, nodes in by_path.items()
            for node in nodes
            if id(node) in dead and id(node) in self._kernels.get(path, set())
        )


def uncommented(line: bytes) -> bytes:
    """A Python line without its ``#`` comment (read without a tokenizer, which a file that
    does not parse defeats: a ``#`` inside a string cuts the line there too)."""
    return line.split(b"#", 1)[0]


def _spans(node: Function, line: int) -> bool:
    """Whether ``line`` lies in ``node``'s definition."""
    return node.lineno <= line <= (node.end_lineno or node.lineno)


def _mentions(scan: Sequence[str], names: set[str]) -> dict[str, list[tuple[str, int]]] | None:
    """Every ``(resolved file, line)`` where one of ``names`` appears as a word, in the files
    of the repositories above ``scan``; None where the walk stops short or a file fails."""
    rule = Rule.load()
    wanted = {n.encode() for n in names}
    found: dict[str, list[tuple[str, int]]] = {}
    for root in dict.fromkeys(repository_root(p, rule.markers) for p in scan):
        files, cut = searched_files(root, rule)
        if cut:
            return None
        for file in files:
            try:
                data = file.read_bytes()
            except OSError:
                return None
            if wanted.isdisjoint(WORD.findall(data)):
                continue
            resolved = str(file.resolve())
            commented = any(fnmatchcase(file.name, g) for g in rule.comment_files)
            for number, text in enumerate(data.splitlines(), 1):
                if commented:  # ``#    mla_decode_ref.decode_attention_fwd,``: no call
                    text = uncommented(text)
                for word in wanted.intersection(WORD.findall(text)):
                    found.setdefault(word.decode(), []).append((resolved, number))
    return found
