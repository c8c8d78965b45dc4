"""The values the host reader (``host.py``) gives a dtype the source does not name: a token.

A token stands for one dtype of one root (``$<scope id>:<name>``: the dtype of a wrapper's
``name``; ``$<node id>``: the value of one conditional expression), optionally with

- ``{d1,d2}``: the dtypes the root may be (checks such as ``assert x.dtype in (...)``, the
  branches of ``torch.int32 if n < 2**31 else torch.int64``); none: any dtype;
- ``[d=a|b;e=c]``: per dtype of the root, the dtypes the value is where that is not the root's
  own dtype. FlagGems' ``cummax`` computes ``compute_dtype = out.dtype`` then sets it to
  ``torch.float32`` under ``if input.dtype == torch.float16 or input.dtype ==
  torch.bfloat16``: a buffer made with it is float32 for an fp16 or bf16 input and the
  input's dtype otherwise, never a bf16 next to a bf16 input it is only ever paired with as
  float32. Reading such a value as "any of the branches" would pair bf16 with bf16.

Launch arguments of one root share one type variable (the reader's ``per`` gives each
argument's dtype for each dtype the variable takes: ``Launch.images``). An argument that is
several dtypes for one dtype of its root (callers passing float32, float16 and ``q.dtype``
buffers: one of them per launch, not known which) is not tied: two loads of its pointer would
otherwise pair a bf16 with an fp16. Never a dtype name (none starts with ``$``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from matrix.analyze.profile.model import ELEM_DTYPES

TOKEN = "$"
Images = Mapping[str, frozenset[str]]  # root dtype -> the dtypes the value is for it


@dataclass(frozen=True)
class Token:
    root: str
    domain: frozenset[str] | None = None  # the dtypes the root may be; None: any
    images: Images = field(default_factory=dict)  # where not the root's own dtype

    def image(self, d: str) -> frozenset[str]:
        return self.images.get(d, frozenset({d}))

    def readings(self) -> frozenset[str]:
        """The root dtypes this token is read for (any: every element dtype)."""
        return self.domain if self.domain is not None else ELEM_DTYPES | frozenset(self.images)

    def spelt(self) -> str:
        dom = "{" + ",".join(sorted(self.domain)) + "}" if self.domain is not None else ""
        kept = {d: ds for d, ds in self.images.items() if self.domain is None or d in self.domain}
        pairs = ";".join(f"{d}={'|'.join(sorted(ds))}" for d, ds in sorted(kept.items()))
        return f"{self.root}{dom}" + (f"[{pairs}]" if pairs else "")


def parse(t: str) -> Token:
    head, bracket, rest = t.partition("[")
    images: dict[str, frozenset[str]] = {}
    for pair in filter(None, rest.rstrip("]").split(";")) if bracket else ():
        d, _, ds = pair.partition("=")
        images[d] = frozenset(ds.split("|"))
    root, brace, dom = head.partition("{")
    domain = frozenset(filter(None, dom.rstrip("}").split(","))) if brace else None
    return Token(root, domain, images)


def split_token(t: str) -> tuple[str, frozenset[str] | None]:
    """A token's root and the dtypes the root admits (None: any)."""
    tok = parse(t)
    return tok.root, tok.domain


def images_of(t: str) -> dict[str, frozenset[str]]:
    """Per dtype the root admits, the dtypes the token's value is where not that dtype."""
    tok = parse(t)
    return {d: ds for d, ds in tok.images.items() if tok.domain is None or d in tok.domain}


def restrict_token(t: str, admitted: frozenset[str]) -> str:
    """``t`` where checks of its value's dtype admit only ``admitted``: the root dtypes whose
    value may still be one of them, each value narrowed to them."""
    tok = parse(t)
    kept = {d for d in admitted if d not in tok.images}
    kept |= {d for d, ds in tok.images.items() if ds & admitted}
    domain = kept if tok.domain is None else tok.domain & kept
    images = {d: ds & admitted for d, ds in tok.images.items() if d in domain}
    return Token(tok.root, frozenset(domain), images).spelt()


def _dtype(v: str) -> bool:
    """A dtype name (not a token, not the host's ``i32`` for an int)."""
    return not v.startswith(TOKEN) and v in ELEM_DTYPES


def join(values: Sequence[str | None], root: str | None = None) -> str | None:
    """One value of several (branches, callers): the value they all are; for tokens of one
    root (and dtype names), per dtype of the root what any of them is; for dtype names alone,
    one dtype of them under ``root`` where given (``torch.int32 if c else torch.int64``);
    else None (unknown)."""
    if not values or any(v is None for v in values):
        return None
    distinct = sorted({v for v in values if v is not None})
    if len(distinct) == 1:
        return distinct[0]
    tokens = [parse(v) for v in distinct if v.startswith(TOKEN)]
    names = [v for v in distinct if not v.startswith(TOKEN)]
    if not tokens:
        ok = root is not None and all(_dtype(v) for v in names)
        return Token(TOKEN + (root or ""), frozenset(names)).spelt() if ok else None
    if len({t.root for t in tokens}) != 1 or not all(_dtype(v) for v in names):
        return None
    # each token for the root dtypes it admits; a dtype name for every one of them
    domains = [t.domain for t in tokens]
    domain = None if names or None in domains else frozenset().union(*filter(None, domains))
    keys = domain if domain is not None else frozenset().union(*(t.readings() for t in tokens))
    images: dict[str, frozenset[str]] = {}
    for d in keys:
        got = frozenset(names).union(*(t.image(d) for t in tokens if d in t.readings()))
        if got != {d}:
            images[d] = got
    return Token(tokens[0].root, domain, images).spelt()


def tested(subject: str | None, true: frozenset[str] | None,
           false: frozenset[str] | None) -> Tested | bool | None:  # fmt: skip
    """What a test of a dtype says: ``subject`` (the dtype tested: a name, a token) and the
    dtypes for which the test holds (``true``) and fails (``false``); None: unknown."""
    if subject is None or true is None or false is None:
        return None
    if not subject.startswith(TOKEN):
        return True if subject in true else False if subject in false else None
    tok = parse(subject)
    holds: dict[str, bool | None] = {}
    for d in tok.readings():
        image = tok.image(d)
        holds[d] = True if image <= true else False if image <= false else None
    return Tested(tok.root, tok.domain, holds)


@dataclass(frozen=True)
class Tested:
    """Per dtype of ``root`` (of those ``domain`` admits; None: any), whether a test holds
    (None: it may or may not)."""

    root: str
    domain: frozenset[str] | None
    holds: Mapping[str, bool | None]


def pick(test: Tested | bool | None, then: str | None, orelse: str | None,
         root: str | None = None) -> str | None:  # fmt: skip
    """The value of a name after ``if test: name = then`` / ``else: name = orelse`` (or of
    ``then if test else orelse``): the branch the test takes (per dtype of its root: FlagGems'
    ``compute_dtype`` above); either where it is unknown (``join``, under ``root``)."""
    if test is True or test is False:
        return then if test else orelse
    if test is None or then is None or orelse is None:
        return join([then, orelse], root)
    sides = [parse(v) if v.startswith(TOKEN) else v for v in (then, orelse)]
    if any(isinstance(s, Token) and s.root != test.root for s in sides) or any(
        not isinstance(s, Token) and not _dtype(s) for s in sides
    ):
        return join([then, orelse], root)  # a value of another root: not this test's to split
    images: dict[str, frozenset[str]] = {}
    for d, h in test.holds.items():
        chosen = [s for s, side in zip(sides, (True, False), strict=True) if h is None or h == side]
        got = frozenset().union(
            *(s.image(d) if isinstance(s, Token) else frozenset({s}) for s in chosen)
        )
        if got != {d}:
            images[d] = got
    return Token(test.root, test.domain, images).spelt()
