"""Enumerations of the instruction set: opcodes, DTYPE codes, DEQUANT_FMT, address markers, generations.

Sources: docs/firmware.md §1.2 (ADDR4 markers), §4.2 (opcodes seen in kernel_info tables), §5 (DTYPE), §2.1
(DEQUANT_FMT, re-exported from :mod:`q7emu.model.kernels`) and the generation names of docs/firmware.md §0.
"""
from __future__ import annotations

import enum

from q7emu.errors import InvalidArgument
from q7emu.model.kernels import DequantFmt

DEQUANT_FMT = DequantFmt

__all__ = ["Opcode", "OPCODE_NAMES", "DType", "DTYPE", "DEQUANT_FMT", "DequantFmt", "AddrMarker",
           "Generation", "Engine", "is_cptc", "INST_WORD_LEN", "POOLING_NUM_CHANNELS"]

#: header.inst_word_len of a 64-byte record (16 dwords) [docs/firmware.md §1.2]
INST_WORD_LEN = 0x10
#: POOLING_NUM_CHANNELS: the number of SBUF partitions [docs/firmware.md §1.3 clause 3]
POOLING_NUM_CHANNELS = 128


class Opcode(enum.IntEnum):
    """TPB opcodes q7emu knows by name (byte 0 of a record). Only 0x7B and 0xE3 are executed."""

    TENSOR_DEQUANTIZE = 0x7B
    QUANTIZE_MX = 0xE3
    EXTENDED_INST = 0xF0
    POOL_IOTA = 0x7E
    CROSS_LANE_REDUCE_ARITH = 0x7C
    CROSS_LANE_REDUCE_BITVEC = 0x7D
    POOL = 0x45
    TENSOR_TENSOR_BITVEC = 0x51
    TENSOR_TENSOR_ARITH = 0x41
    TENSOR_REDUCE_BITVEC = 0x52
    COPY = 0x46
    CAST = 0x47
    GET_SEQUENCE_BOUNDS = 0xBE
    NONZERO_WITH_COUNT = 0xF2
    CONV_LUT_LOAD = 0xE4


#: opcode -> short kernel name for display (docs/firmware.md §4.2 KIT naming; confidence of the names varies)
OPCODE_NAMES: dict[int, str] = {
    0x7E: "pool_iota", 0x7C: "pool_cross_lane_reduce_arith", 0x7D: "pool_cross_lane_reduce_bitvec",
    0x45: "decode_pool", 0x51: "tensor_tensor_bitvec", 0x41: "pool_tensor_tensor_arith_op",
    0xF0: "extended_inst", 0x52: "tensor_reduce_bitvec", 0x46: "pool_copy", 0x47: "pool_cast",
    0xBE: "get_sequence_bounds", 0xF2: "nonzero_with_count", 0x7B: "TensorDequantize",
    0xE3: "QuantizeMX", 0xE4: "cptc_dispatcher",
}


class DType(enum.IntEnum):
    """NEURON_ISA_TPB_DTYPE, every code of docs/firmware.md §5 (1-byte packed enum; codes never change meaning)."""

    INVALID = 0x00
    UINT64 = 0x01
    INT8 = 0x02
    UINT8 = 0x03
    INT16 = 0x04
    UINT16 = 0x05
    BFLOAT16 = 0x06
    FP16 = 0x07
    INT32 = 0x08
    UINT32 = 0x09
    FP32 = 0x0A
    FP32R = 0x0B
    INT64 = 0x0C
    FP8_EXP3 = 0x0D   # E3M4
    FP8_EXP4 = 0x0E   # E4M3
    FP8_EXP5 = 0x0F   # E5M2
    FP4_EXP2 = 0x10   # OCP FP4 E2M1 (MARIANA+)
    FP8_EXP2 = 0x11   # E2M5 (MAVERICK)
    INT4 = 0x12       # MAVERICK
    SFP8_E8 = 0x13    # E8M0, scale only
    SFP8_E7 = 0x14
    SFP8_E6 = 0x15
    SFP8_E5 = 0x16
    CPTC1 = 0x19
    CPTC2 = 0x1A
    CPTC3 = 0x1B
    CPTC4 = 0x1C
    CPTC5 = 0x1D
    CPTC6 = 0x1E
    CPTC7 = 0x1F


DTYPE = DType


def is_cptc(code: int) -> bool:
    """``is_cptc(c)``: ``(c & 0xF8) == 0x18 and (c & 7) != 0`` [docs/firmware.md §5]."""
    return (code & 0xF8) == 0x18 and (code & 7) != 0


def dtype_name(code: int) -> str:
    """Name of a DTYPE code, or ``0x..(unassigned)``."""
    try:
        return DType(code).name
    except ValueError:
        return f"0x{code:02x}(unassigned)"


class AddrMarker(enum.IntEnum):
    """Marker byte (the top byte) of an ADDR4 [docs/firmware.md §1.2]."""

    IMMEDIATE = 0x00
    ADDR_REG = 0x80
    SHAPE_REG = 0x40
    ADDR_SHAPE_REG = 0xC0
    INDIRECT = 0x20
    INDIRECT_ADDR_REG = 0xA0


class Engine(enum.Enum):
    """Engines q7emu models: POOL (Q7 GPSIMD, kernel_info dispatch) and DVE (vector engine)."""

    POOL = "POOL"
    DVE = "DVE"


class Generation(enum.Enum):
    """NeuronCore generations (docs/firmware.md §0): value = (nc_version, coretype)."""

    SUNDA = (2, 6)
    CAYMAN = (3, 13)
    MARIANA = (4, 21)
    MARIANA_PLUS = (4, 29)
    MAVERICK = (5, 37)

    @property
    def nc_version(self) -> int:
        """NeuronCore version: 2, 3, 4, 4, 5."""
        return self.value[0]

    @property
    def coretype(self) -> int:
        """Core type id (6, 13, 21, 29, 37)."""
        return self.value[1]

    @classmethod
    def parse(cls, name: str | Generation) -> Generation:
        """Accept a member, or a case-insensitive name (``mariana-plus``, ``mariana+`` also work)."""
        if isinstance(name, Generation):
            return name
        if isinstance(name, str):
            key = name.strip().upper().replace("-", "_").replace("+", "_PLUS")
            if key in cls.__members__:
                return cls[key]
        raise InvalidArgument("generation", name, f"must be one of {', '.join(cls.__members__)}")
