"""``python -m q7emu``: the command-line interface."""
import sys

from q7emu.cli.main import main

sys.exit(main())
