"""Preparing submissions for grading; torch-free, so the bot process can import it."""

#: set by ``brrrbot run`` for its local pool: the pid the pool must not outlive
PARENT_PID_ENV = "BRRRBOT_WORKER_PARENT_PID"
