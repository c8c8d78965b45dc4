"""What one compiled kernel uses, read from what an ahead-of-time compile produced (no GPU).

No Triton release 3.0-3.9 puts registers or spills into a compile's metadata without a GPU:
``CompiledKernel.n_regs``/``n_spills`` are filled only when the binary is loaded on a device
(``driver.active.utils.load_binary``; its own comment: "TODO: n_regs, n_spills should be
metadata generated when calling ptxas"). What every release does produce:

- CUDA: the cubin. Its global ``.nv.info`` section holds, per function symbol,
  ``EIATTR_REGCOUNT`` (registers per thread, what ``ptxas -v`` prints as "Used N registers")
  and ``EIATTR_FRAME_SIZE`` (bytes of local memory per thread, ptxas's "bytes stack frame",
  where spills live; what the driver reports as ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`` and
  Triton turns into ``n_spills``). Read from the cubin, they cost no second ``ptxas`` run
  (a ``ptxas -v`` of the fused split-K took 4.6 s on this machine). The spill *store* bytes
  alone are not in the cubin.
- HIP: the AMDGCN text's kernel metadata ``.vgpr_count`` and ``.private_segment_fixed_size``
  (scratch bytes per work-item, where spills live), else its comments ``; NumVgprs: N`` and
  ``; ScratchSize: N`` (3.0.0 writes only the metadata).
- Both: ``shared`` (bytes of shared memory / LDS) in the compile's metadata.

>>> amdgcn_resources("; NumVgprs: 40\\n; ScratchSize: 0\\n")
{'registers': 40, 'local_bytes': 0, 'resource_source': 'amdgcn comments'}
>>> amdgcn_resources(".private_segment_fixed_size: 16\\n.vgpr_count: 48\\n")["registers"]
48
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

# .nv.info attribute codes (NVIDIA's EIATTR_* numbering, as cuobjdump names them).
EIATTR_REGCOUNT = 0x2F
EIATTR_FRAME_SIZE = 0x11
# .nv.info entry formats: every entry starts with (format, attribute, u16); an SVAL's u16 is
# the size of the value bytes that follow, other formats hold their value in the u16 itself.
_EIFMT_SVAL = 0x04
_KNOWN_FORMATS = frozenset({0x01, 0x02, 0x03, 0x04})


class CubinUnreadable(ValueError):
    """The bytes are not an ELF cubin this module can read (the message says what was off)."""


def _sections(elf: bytes) -> dict[str, tuple[int, int, int]]:
    """{section name: (offset, size, link)} of a little-endian ELF64 file."""
    if elf[:4] != b"\x7fELF" or len(elf) < 64 or elf[4] != 2 or elf[5] != 1:
        raise CubinUnreadable(
            f"expected a little-endian ELF64 cubin, got {len(elf)} bytes starting {elf[:6]!r}"
        )
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    raw = []
    for i in range(shnum):
        name_at, _type, _flags, _addr, off, size, link = struct.unpack_from(
            "<IIQQQQI", elf, shoff + i * shentsize
        )
        raw.append((name_at, off, size, link))
    names_at = raw[shstrndx][1]

    def section_name(offset: int) -> str:
        start = names_at + offset
        return elf[start : elf.index(b"\0", start)].decode("utf-8", "replace")

    return {section_name(n): (off, size, link) for n, off, size, link in raw}


def _symbol_names(elf: bytes, sections: Mapping[str, tuple[int, int, int]]) -> dict[int, str]:
    """{symbol index: name} from ``.symtab`` (its names in ``.strtab``)."""
    if ".symtab" not in sections or ".strtab" not in sections:
        return {}
    off, size, _ = sections[".symtab"]
    strtab = sections[".strtab"][0]
    out = {}
    for i in range(size // 24):
        st_name = struct.unpack_from("<I", elf, off + 24 * i)[0]
        start = strtab + st_name
        out[i] = elf[start : elf.index(b"\0", start)].decode("utf-8", "replace")
    return out


def nv_info(cubin: bytes) -> dict[str, dict[int, int]]:
    """{function name: {EIATTR code: value}} from the cubin's global ``.nv.info`` section, for
    the attributes that name a function (symbol index, value). Stops at an entry format it does
    not know rather than misread the rest."""
    sections = _sections(cubin)
    if ".nv.info" not in sections:
        raise CubinUnreadable(f"the cubin has no .nv.info section (sections: {sorted(sections)})")
    symbols = _symbol_names(cubin, sections)
    off, size, _ = sections[".nv.info"]
    out: dict[str, dict[int, int]] = {}
    p = off
    while p + 4 <= off + size:
        fmt, attr, word = struct.unpack_from("<BBH", cubin, p)
        if fmt not in _KNOWN_FORMATS:
            break
        if fmt != _EIFMT_SVAL:
            p += 4
            continue
        if word == 8:
            sym, value = struct.unpack_from("<II", cubin, p + 4)
            out.setdefault(symbols.get(sym, f"symbol {sym}"), {})[attr] = value
        p += 4 + word
    return out


def cubin_resources(cubin: bytes, kernel: str | None = None) -> dict[str, Any]:
    """``{"registers", "local_bytes", "resource_source"}`` of ``kernel`` (the compile's
    metadata ``name``) in a cubin; with no name, or a name the cubin lacks, the function with
    the most registers (a Triton cubin holds the kernel and its noinline helpers)."""
    table = nv_info(cubin)
    if not table:
        raise CubinUnreadable("the cubin's .nv.info names no function")
    if kernel not in table:
        kernel = max(table, key=lambda k: table[k].get(EIATTR_REGCOUNT, -1))
    attrs = table[kernel]
    return {
        "registers": attrs.get(EIATTR_REGCOUNT),
        "local_bytes": attrs.get(EIATTR_FRAME_SIZE),
        "resource_source": "cubin .nv.info",
    }


# (field, pattern) in the order tried: the AMDHSA kernel metadata every release writes (3.0.0
# writes no "; NumVgprs" comments), then the comments later releases add.
_AMDGCN_FIELDS = (
    ("registers", "amdgcn metadata", re.compile(r"^\s*\.vgpr_count:\s*(\d+)", re.M)),
    ("registers", "amdgcn comments", re.compile(r";\s*NumVgprs:\s*(\d+)")),
    ("local_bytes", "amdgcn metadata",
     re.compile(r"^\s*\.private_segment_fixed_size:\s*(\d+)", re.M)),
    ("local_bytes", "amdgcn comments", re.compile(r";\s*ScratchSize:\s*(\d+)")),
)  # fmt: skip


def amdgcn_resources(amdgcn: str) -> dict[str, Any]:
    """VGPRs and scratch (private segment) bytes per work-item from the AMDGCN text."""
    out: dict[str, Any] = {"registers": None, "local_bytes": None}
    sources = []
    for key, source, pattern in _AMDGCN_FIELDS:
        match = pattern.search(amdgcn) if out[key] is None else None
        if match:
            out[key] = int(match.group(1))
            sources.append(source)
    out["resource_source"] = " + ".join(dict.fromkeys(sources)) or "amdgcn: no VGPR count found"
    return out


def of_compile(asm: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Resources of one compile from its ``asm`` stages and plain metadata: registers,
    local_bytes (spill space), shared, and where the first two came from. A stage that cannot
    be read gives None for its numbers and says why in ``resource_source``; never raises."""
    out: dict[str, Any] = {"registers": None, "local_bytes": None, "shared": None}
    shared = metadata.get("shared")
    out["shared"] = shared if isinstance(shared, int) else None
    cubin = asm.get("cubin")
    try:
        if isinstance(cubin, bytes | bytearray):
            name = metadata.get("name")
            out.update(cubin_resources(bytes(cubin), name if isinstance(name, str) else None))
        elif isinstance(asm.get("amdgcn"), str):
            out.update(amdgcn_resources(asm["amdgcn"]))
        else:
            out["resource_source"] = f"no cubin or amdgcn among the stages {sorted(asm)}"
    except (CubinUnreadable, struct.error, ValueError) as e:
        out["resource_source"] = f"unreadable: {e}"[:300]
    return out
