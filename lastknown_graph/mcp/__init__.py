"""The memory as an MCP server: ``lastknown mcp`` (stdio) and ``lastknown mcp --http PORT`` (streamable HTTP).

An adapter over the core, which never imports it. Only ``server.py`` needs the ``mcp`` SDK
(``pip install 'lastknown_graph[mcp]'``): ``service.py`` says what each tool does, ``schemas.py`` what it takes and
returns; background writes are the core's ``BackgroundWriter``.
"""
