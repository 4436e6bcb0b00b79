"""``python -m agent_core.cli``: the same as the ``agent-core`` command."""

import sys

from . import main

sys.exit(main())
