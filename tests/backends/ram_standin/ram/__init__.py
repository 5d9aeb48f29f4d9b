"""Stand-in for recognize-anything's ``ram`` package (see ../README.md)."""
