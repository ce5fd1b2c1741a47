import sys

from kera_core.cli import main

sys.exit(main())
