"""corebox: the Agents API on your own machine, in one file."""

__version__ = "0.1.0"
