"""``python -m acor``: the same as the ``acor`` command."""

from acor.cli.main import main

raise SystemExit(main())
