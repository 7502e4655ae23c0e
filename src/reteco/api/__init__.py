"""The public Python API (pages/python_api.md): ``reteco.evaluate``, ``reteco.evaluate_answers``,
their result ``Evaluation`` and the error ``InputError``, re-exported by ``reteco`` itself.

An entry point, like the commands: it scores through ``reteco.scoring.submission`` exactly as
``reteco score`` does (``reteco.api.evaluation``)."""

from reteco.api.compare import compare
from reteco.api.evaluation import Evaluation, evaluate, evaluate_answers
from reteco.problems import InputError

__all__ = ["Evaluation", "InputError", "compare", "evaluate", "evaluate_answers"]
