"""Graders are code; quests name them.

``graders/tasks/`` holds the graders, one module each, found by ``graders.registry`` (which
also tells the torch-free bot what each grader is without importing it); the modules here are
what they stand on: the verdict (``base``), the case framework (``cases``, ``comparison``,
``mistakes``, ``draws``, ``tensors``, ``tracebacks``, ``job_status``), the source scan
(``source_scan``), the roofline reading (``roofline``), and the speed references (``speed/``).
"""
