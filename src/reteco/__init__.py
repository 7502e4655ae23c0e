"""reteco: the official evaluation system of RETECO, SemEval-2027 Task 1."""

__version__ = "0.1.0"
