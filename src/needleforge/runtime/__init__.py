"""What a running command needs whatever its stage: progress counts (:mod:`.progress`), the
debug log of errors (:mod:`.debug_log`) and the model-backend checks made before anything slow
(:mod:`.preflight`). The CLI, the stages and the flows use these; no stage's data lives here.
"""
