"""reteco: the official evaluation system of RETECO, SemEval-2027 Task 1.

``reteco.evaluate(run, reference, measures=None)``, ``reteco.evaluate_answers(...)``, their result
``reteco.Evaluation`` and ``reteco.InputError`` are the public Python API (``reteco.api``;
pages/python_api.md). They are loaded on first use (PEP 562 ``__getattr__``): ``import reteco``
stays free, and every module of the package can read ``reteco.__version__`` without loading the
scoring.
"""

__version__ = "0.1.0"

_PUBLIC = ("Evaluation", "InputError", "compare", "evaluate", "evaluate_answers")
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name in _PUBLIC:
        from reteco import api  # the one upward import of the package's top (tests/test_house.py allows it)

        return getattr(api, name)
    raise AttributeError(f"module 'reteco' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
