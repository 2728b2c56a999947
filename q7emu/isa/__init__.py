"""Instruction-set layer: records (64-byte structs), enums, validity predicates and kernel_info tables."""
from __future__ import annotations

from q7emu.isa.enums import DEQUANT_FMT, DTYPE, AddrMarker, DequantFmt, DType, Engine, Generation, Opcode, is_cptc  # noqa: F401
from q7emu.isa.kernel_info import (  # noqa: F401
                    UNKNOWN_FUNC_VA,
                    KernelInfoRecord,
                    KernelInfoTable,
                    builtin_tables,
                    dve_table,
                    pool_table,
)
from q7emu.isa.records import (  # noqa: F401
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
from q7emu.isa.validate import Verdict, check, validate  # noqa: F401
