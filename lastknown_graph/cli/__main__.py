"""``python -m lastknown_graph.cli``: the same as the ``lastknown`` command."""

from lastknown_graph.cli.app import main

raise SystemExit(main())
