#!/usr/bin/env python3
"""Write q7emu/_dataclass_methods.py: the methods of every dataclass of the package, compiled ahead of time
(q7emu/_dataclass.py; docs/build.md §3.10).

Imports every module of q7emu (the decorator records each class's shape as it makes the class), then writes one
method maker per class. Usage: python tools/gen_dataclass_methods.py [--check]   (--check: exit 1 if stale)
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def every_module() -> list[str]:
    """The names of q7emu's modules (``__main__`` left out: importing it runs the command line)."""
    import q7emu
    return sorted(m.name for m in pkgutil.walk_packages(q7emu.__path__, "q7emu.")
                  if not m.name.endswith("__main__"))


def rendered() -> str:
    """The text q7emu/_dataclass_methods.py should have: every module imported, every class's shape rendered."""
    for name in every_module():
        importlib.import_module(name)
    from q7emu import _dataclass
    return _dataclass.render_module(_dataclass.SHAPES)


def main(argv: list[str]) -> int:
    """Write the file; with --check, say whether it is stale (exit 1) instead."""
    from q7emu.fileio import write_generated
    return write_generated({ROOT / "q7emu" / "_dataclass_methods.py": rendered()}, argv,
                           "python tools/gen_dataclass_methods.py", ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
