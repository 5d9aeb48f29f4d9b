"""One module per box of the pipeline: the function the CLI command, the DVC stage and the
Prefect task all call, over a store path (or folders) and the whole params.

A stage function opens the store, hands what it read to the domain packages (which compute and
return) and writes their results back; it prints nothing and returns the stage's own result
object for reporting. ``docs/architecture.md`` draws the stages and says what may import what.
"""
