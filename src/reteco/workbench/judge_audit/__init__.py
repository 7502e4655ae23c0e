"""The judge's audit and disclosure, on the organizers' side: golden sets (``golden``,
``golden_templates``) and their meta-evaluation (``meta_evaluation``, ``meta_contrasts``,
``simulated_judges``), the cost of judging a phase before it runs (``estimate``, ``judge_cost``),
the blind human-rating sample and its annotators' guide (``human_sample``, ``annotator_guide``),
re-judging and a second judge (``rejudging``), the disclosure report (``report``,
``stability_report``) and the agreement page (``agreement_page``). The judge that scores a
submission (``reteco.judge``) loads none of it."""
