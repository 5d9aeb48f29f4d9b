"""What only the Prefect flows (``flows/``) use: the task runners chosen by ``runner:``
(:mod:`.runners`) and the artifacts a refresh or release run posts (:mod:`.artifacts`).
The CLI and the DVC stages never import this package.
"""
