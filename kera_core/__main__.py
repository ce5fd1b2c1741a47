from kera_core.cli import entry_point

entry_point()
