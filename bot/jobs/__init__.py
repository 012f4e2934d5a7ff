"""The contract between the bot and its workers: the job queue, what a job carries, who grades.

Both processes import this package; it imports neither torch nor Discord.
"""
