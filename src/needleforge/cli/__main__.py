"""``python -m needleforge.cli``: the same command line as the ``needleforge`` script, for a venv
whose scripts folder is not on ``PATH`` (CI's smoke set calls it this way)."""

from needleforge.cli.main import app

if __name__ == "__main__":
    app(prog_name="needleforge")
