"""``python -m q7emu``: the command-line interface (exit status 2, in one line, when q7emu cannot load)."""
import sys

try:
    from q7emu.cli.main import main
except ImportError as e:  # pragma: no cover - a broken installation: say what to do, no traceback
    print(f"q7emu: error: {e}", file=sys.stderr)
    sys.exit(2)

sys.exit(main())
