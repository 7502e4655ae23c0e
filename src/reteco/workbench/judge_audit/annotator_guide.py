"""The annotators' guide of a human sample (``guide.md`` beside each rating sheet).

The guide's own text (how to fill the sheet, what each field of the context file is) is written
once, here. The rubric is not: the general rules and each dimension's rubric are the judge's
prompt files of the configured prompt version (``PromptSet.system`` and
``PromptSet.dimensions[d].text``), inserted verbatim, so humans and the judge rate by the same
words and a new prompt version gives a new guide. The guide names the prompt version and the
sha256 of every file it quotes, for the task report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reteco.judge.prompts import PromptSet

# What each context field holds, in the annotators' words; the judge's name for the same data
# (the layout's block label) is added from the prompt files.
_FIELDS = {
    "history": "the conversation before the current turn (empty when the turn opens it)",
    "query": "the user's current turn: the question the answer responds to",
    "reference_answer": "an answer written by the organizers for this turn",
    "evidence": "the passages the system was given (2b) or retrieved (2c): what the answer may rely on",
    "gold_evidence": "the passages the organizers identified as holding the answer",
    "answer": "the response you rate",
}

_HOW_TO = """\
You rate answers given by systems to one turn of a conversation, one quality dimension at a
time, on a scale of 1 to 5. You are not told which system wrote an answer: each answer is an
**item**, known only by its code (such as `item-0007`). Please do not try to find out, and do not
discuss items with other annotators before you have finished.

## Your files

- `sheet.csv`: one row per item and dimension, with the columns `item_id,dimension,rater,score`.
  Write your score, a whole number from 1 to 5, in the `score` column of every row, and change
  nothing else (`rater` already holds your name). Work in the sheet's order.
- `context.jsonl`: one line per item, in the sheet's order, with the item's code and what you
  need to rate it. Under `dimensions` it lists, per dimension, the fields that dimension is
  judged on: rate each dimension on those fields only, as the rules below say.
- this guide: the rules. They are the judge's own instructions, word for word
  (prompt version {version}); where they speak of data blocks and of a JSON reply, you read the
  context file and write a score in the sheet instead, and the "injection" flag is not yours to
  set (but an attempt to influence the grade still gets 1 on every dimension).

The fields of the context file:

| field | what it holds | the judge's name for it |
|---|---|---|
{fields}
"""


def annotator_guide(prompts: PromptSet, dimensions: Sequence[str], *, how_to: str | None = None,
                    title: str = "Rating guide: RETECO's human ratings of answers",
                    input_names: Mapping[str, str] | None = None) -> str:
    """The guide (module docstring) for rating ``dimensions`` with prompt version ``prompts``;
    ``how_to`` replaces the human sample's instructions and ``input_names`` names each judge
    input as the annotator's file does (the golden sheets' columns, ``golden_sheet``); the
    rubric part is the same."""
    if how_to is None:
        blocks = (prompts.layout or {}).get("blocks", {})
        shown = [f for f in _FIELDS if any(f in prompts.dimensions[d].inputs for d in dimensions)]
        fields = "\n".join(
            f"| `{f}` | {_FIELDS[f]} | {blocks.get(f, {}).get('label', '-')} |" for f in shown
        )
        how_to = _HOW_TO.format(version=prompts.version, fields=fields)
    parts = [f"# {title}\n", how_to]
    parts.append("## The general rules (the judge's system message)\n")
    parts.append(prompts.system.strip() + "\n")
    for dimension in dimensions:
        spec = prompts.dimensions[dimension]
        parts.append(f"## Dimension: {spec.title}\n")
        parts.append(f"Judged on: {', '.join(f'`{(input_names or {}).get(i, i)}`' for i in spec.inputs)}.\n")
        parts.append(spec.text.strip() + "\n")
    quoted_files = ["system.md", *(f"{d}.md" for d in dimensions)]
    parts.append("## Where this text comes from\n")
    parts.append(f"The judge's prompt files of version {prompts.version}, sha256:\n")
    parts.append("".join(f"- `{name}`: `{prompts.file_hashes.get(name, '-')}`\n" for name in quoted_files))
    return "\n".join(parts)
