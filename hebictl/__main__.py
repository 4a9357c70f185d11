"""``python -m hebictl`` runs the command line."""

import sys

from hebictl.cli import main

sys.exit(main())
