"""`python -m larkbot`."""

import sys

from larkbot.cli import main

sys.exit(main())
