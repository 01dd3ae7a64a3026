"""The package's version, read by the build (``[tool.hatch.version]``), ``lastknown_graph.__version__`` and the
tracer's instrumentation scope."""

__version__ = "0.1.0"
