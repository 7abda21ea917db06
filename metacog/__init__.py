"""metacog: elicitation and statistics behind metacog-book."""

__version__ = "0.1.0"
