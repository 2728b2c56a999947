"""Python views of the Q7 register files (docs/firmware.md §6.1), for tests, traces and exploration.

These mirror the C types of src/primitives/q7regs.pxd bit for bit: a ``Vec`` is 64 bytes read in any lane view,
a ``WVec`` is the 192-byte architectural image of a wide accumulator read as 64 x 24, 32 x 48 or
16 x 96-bit two's-complement lanes, a ``VBool`` is 64 predicate bits (1/2/4 per 8/16/32-bit lane),
a ``PR`` is the 64-bit packed-operand register.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from q7emu._dataclass import dataclass
from q7emu.errors import InvalidArgument

#: lane view name -> (numpy dtype, lanes)
VEC_VIEWS: dict[str, tuple[str, int]] = {
    "2nx8": ("<u1", 64), "2nx8s": ("<i1", 64), "nx16": ("<u2", 32), "nx16s": ("<i2", 32),
    "n_2x32": ("<u4", 16), "n_2x32s": ("<i4", 16), "nxf16": ("<f2", 32), "n_2xf32": ("<f4", 16),
}
WVEC_VIEWS = {24: 64, 48: 32, 96: 16}


@dataclass(frozen=True)
class _Image:
    """A register held as its architectural byte image ``raw`` of exactly ``SIZE`` bytes."""

    SIZE: ClassVar[int] = 0
    NAME: ClassVar[str] = ""
    raw: bytes

    def __post_init__(self) -> None:
        if len(self.raw) != self.SIZE:
            raise InvalidArgument("raw", len(self.raw), f"a {self.NAME} register is {self.SIZE} bytes")


@dataclass(frozen=True)
class Vec(_Image):
    """A 512-bit vector register: ``raw`` is its 64 bytes (lane 0 first, little-endian lanes)."""

    SIZE: ClassVar[int] = 64
    NAME: ClassVar[str] = "vec"

    @classmethod
    def from_lanes(cls, lanes: np.ndarray) -> Vec:
        """Build from a lane array of any supported view (any dtype, shape totalling 64 bytes)."""
        arr = np.ascontiguousarray(lanes)
        if arr.nbytes != 64:
            raise InvalidArgument("lanes", arr.shape, "lanes must total 64 bytes")
        return cls(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())

    def view(self, name: str) -> np.ndarray:
        """Lanes in view ``name`` (2nx8, 2nx8s, nx16, nx16s, n_2x32, n_2x32s, nxf16, n_2xf32): a 1-D array of
        VEC_VIEWS[name] = (little-endian dtype, lanes), e.g. uint16[32] for nx16."""
        if name not in VEC_VIEWS:
            raise InvalidArgument("view", name, f"one of {', '.join(VEC_VIEWS)}")
        return np.frombuffer(self.raw, dtype=VEC_VIEWS[name][0]).copy()


@dataclass(frozen=True)
class WVec(_Image):
    """A 1536-bit wide accumulator: ``raw`` is its 192-byte image (lane i of width W at bits [iW, iW+W))."""

    SIZE: ClassVar[int] = 192
    NAME: ClassVar[str] = "wvec"

    @classmethod
    def from_lanes(cls, lanes: list[int] | np.ndarray, width: int) -> WVec:
        """Build from WVEC_VIEWS[width] integer lanes of ``width`` bits (24: 64 lanes, 48: 32, 96: 16), each its
        signed or its unsigned value (-2^(width-1) .. 2^width - 1; anything else is refused, naming the lane)."""
        if width not in WVEC_VIEWS or len(lanes) != WVEC_VIEWS[width]:
            raise InvalidArgument("width", width, "24 (64 lanes), 48 (32 lanes) or 96 (16 lanes)")
        values = [_lane(x, k, width) for k, x in enumerate(lanes)]
        return cls(b"".join((v % (1 << width)).to_bytes(width // 8, "little") for v in values))

    def lanes(self, width: int) -> list[int]:
        """The WVEC_VIEWS[width] signed lanes of ``width`` bits (24, 48 or 96) as Python ints."""
        if width not in WVEC_VIEWS:
            raise InvalidArgument("width", width, "24, 48 or 96")
        n = width // 8
        out = []
        for i in range(WVEC_VIEWS[width]):
            u = int.from_bytes(self.raw[i * n:(i + 1) * n], "little")
            out.append(u - (1 << width) if u >> (width - 1) else u)
        return out


def _lane(x: object, k: int, width: int) -> int:
    """Lane ``k`` of a ``width``-bit register view: an integer in -2^(width-1) .. 2^width - 1 (InvalidArgument
    naming the lane otherwise)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise InvalidArgument(f"lanes[{k}]", type(x).__name__, "a register lane is an integer")
    v = int(x)
    if not -(1 << (width - 1)) <= v <= (1 << width) - 1:
        raise InvalidArgument(f"lanes[{k}]", v if v.bit_length() <= 128 else f"an int of {v.bit_length()} bits",
                              f"a {width}-bit lane must lie in -2^{width - 1}..2^{width}-1 (its signed or unsigned "
                              "value)")
    return v


def _register_bits(value: object, name: str) -> None:
    """A 64-bit register's value: an integer in 0 .. 2^64 - 1 (InvalidArgument naming it otherwise)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < 1 << 64:
        shown = int(value) if isinstance(value, (int, np.integer)) and int(value).bit_length() <= 128 else \
            type(value).__name__
        raise InvalidArgument(name, shown, "a 64-bit register holds an integer in 0..2^64-1")


@dataclass(frozen=True)
class VBool:
    """A 64-bit predicate register: bit k belongs to 8-bit sub-lane k."""

    bits: int

    def __post_init__(self) -> None:
        _register_bits(self.bits, "bits")

    def lanes(self, lane_bits: int) -> np.ndarray:
        """bool [64*8/lane_bits]: lane k of an 8/16/32-bit view is bit (lane_bits/8)*k."""
        if lane_bits not in (8, 16, 32):
            raise InvalidArgument("lane_bits", lane_bits, "8, 16 or 32")
        step = lane_bits // 8
        return np.array([(self.bits >> (step * k)) & 1 for k in range(64 // step)], dtype=bool)


@dataclass(frozen=True)
class PR:
    """The 64-bit packed-operand register read by the ...XR8 / ...XR16 MACs."""

    value: int

    def __post_init__(self) -> None:
        _register_bits(self.value, "value")

    def fields(self, bits: int, signed: bool = True) -> list[int]:
        """The register as 64/bits fields of ``bits`` (8, 16 or 32) bits, field 0 lowest (bits [bits*j, bits*(j+1))),
        two's-complement when ``signed``."""
        if bits not in (8, 16, 32):
            raise InvalidArgument("bits", bits, "8, 16 or 32")
        out = []
        for j in range(64 // bits):
            f = (self.value >> (bits * j)) & ((1 << bits) - 1)
            out.append(f - (1 << bits) if signed and f >> (bits - 1) else f)
        return out
