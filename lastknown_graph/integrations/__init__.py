"""Memory inside agent frameworks: ``langgraph`` (nodes for a LangGraph agent; needs
``pip install 'lastknown_graph[langgraph]'``). Writes off the answer path, which need no framework, are the core's
``lastknown_graph.background``.
"""
