"""Instruction-set layer: records (64-byte structs), enums, validity predicates and kernel_info tables."""
from __future__ import annotations

from q7emu.isa.enums import (DEQUANT_FMT, DTYPE, AddrMarker, DequantFmt, DType, Engine, Generation,  # noqa: F401
                    Opcode, is_cptc)
from q7emu.isa.kernel_info import (UNKNOWN_FUNC_VA, KernelInfoRecord, KernelInfoTable, builtin_tables,  # noqa: F401
                          dve_table, pool_table)
from q7emu.isa.records import (RECORD_SIZE, Addr4, Events, Header, MemPattern3D, MxMemPattern1D,  # noqa: F401
                      MxTensor1D, MxTensorV2, RawRecord, S3D3TensDequant, S3DMX1Quant, Tensor3D,
                      decode_record, encode_record)
from q7emu.isa.validate import Verdict, check, validate  # noqa: F401
