"""The ``needleforge`` command line: :mod:`~needleforge.cli.main` holds the app and the stage
commands, the other modules its remaining commands and the support they share.

``app`` is re-exported here because ``needleforge.cli:app`` is the console script's entry point
(``[project.scripts]``), which installed copies of the package keep until reinstalled.
"""

from needleforge.cli.main import app

__all__ = ["app"]
