"""``python -m dltrace``: the same as the ``dltrace`` command."""

import sys

from dltrace.cli import main

sys.exit(main())
