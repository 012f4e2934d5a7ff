"""The torch side: a worker process claims jobs, grades them in the sandbox, times speed trials.

Only ``brrrbot worker`` (and ``brrrbot grade`` in a learner's terminal) runs this package's
grading modules; the bot process imports nothing here but this constant and the torch-free
pool launcher.
"""

#: set by ``brrrbot run`` for its local pool: the pid the pool must not outlive
PARENT_PID_ENV = "BRRRBOT_WORKER_PARENT_PID"
