import sys

from kera_lsp import main

sys.exit(main())
