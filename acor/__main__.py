"""``python -m acor``: the same as the ``acor`` command."""

from acor.cli.entry import main

raise SystemExit(main())
