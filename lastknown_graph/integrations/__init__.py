"""Memory inside agent frameworks: ``background`` (writes off the answer path, no framework) and ``langgraph``
(nodes for a LangGraph agent; needs ``pip install 'lastknown_graph[langgraph]'``). Nothing is imported here, so
``lastknown_graph.integrations.background`` works without the framework installed.
"""
