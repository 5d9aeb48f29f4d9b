"""Stand-in for ``ram.models``: like the real one, it re-exports the factory."""

from .ram_plus import ram_plus as ram_plus
