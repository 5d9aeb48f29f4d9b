"""Backends on any OpenAI-compatible chat-completions endpoint (``openai_http``).

Module map: :mod:`.client` (the HTTP client and the frame layouts of a request, also used by
the evaluation adapters) and :mod:`.writer` (the question writer and verifier on it).
Importing this package imports neither.
"""
