"""Instruction-set layer: records (64-byte structs), enums, validity predicates and kernel_info tables."""
from __future__ import annotations

from q7emu.isa.enums import DEQUANT_FMT, DTYPE, AddrMarker, DequantFmt, DType, Engine, Generation, Opcode, is_cptc
from q7emu.isa.kernel_info import (
    UNKNOWN_FUNC_VA,
    KernelInfoRecord,
    KernelInfoTable,
    builtin_tables,
    dve_table,
    pool_table,
)
from q7emu.isa.records import (
    RECORD_SIZE,
    Addr4,
    Events,
    Header,
    MemPattern3D,
    MxMemPattern1D,
    MxTensor1D,
    MxTensorV2,
    RawRecord,
    S3D3TensDequant,
    S3DMX1Quant,
    Tensor3D,
    decode_record,
    encode_record,
)
from q7emu.isa.validate import Verdict, check, validate

# the names this package re-exports (a type checker's no-implicit-reexport reads the list)
__all__ = [
    "DEQUANT_FMT", "DTYPE", "AddrMarker", "DequantFmt", "DType", "Engine", "Generation", "Opcode", "is_cptc",
    "UNKNOWN_FUNC_VA", "KernelInfoRecord", "KernelInfoTable", "builtin_tables", "dve_table", "pool_table",
    "RECORD_SIZE", "Addr4", "Events", "Header", "MemPattern3D", "MxMemPattern1D", "MxTensor1D", "MxTensorV2",
    "RawRecord", "S3D3TensDequant", "S3DMX1Quant", "Tensor3D", "decode_record", "encode_record",
    "Verdict", "check", "validate",
]
