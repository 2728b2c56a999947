"""The ``q7emu`` command line: :func:`q7emu.cli.main.main`, the commands in ``*_commands`` modules and
what they share in :mod:`q7emu.cli.common`."""
