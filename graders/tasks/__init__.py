"""The graders, one module each: ``<name>.py`` is the grader ``<name>`` (``graders.registry``
finds them by walking this folder).  Each starts with its ``DECLARATION`` and defines the
class ``<Name>``; the shared machinery they stand on (``graders.cases``, ``graders.base``,
``graders.roofline``...) lives one level up, and the speed references in ``graders/speed/``.
"""
