"""``python -m acor``: the same as the ``acor`` command."""

from cli.main import main

raise SystemExit(main())
