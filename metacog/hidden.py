"""Old name of :mod:`metacog.probe`, the hidden-state noise probe; kept so that
``from metacog import hidden`` and ``metacog.hidden.<name>`` keep working. New code imports
:mod:`metacog.probe`.
"""

from metacog.probe import *  # noqa: F401,F403
from metacog.probe import __all__  # noqa: F401
