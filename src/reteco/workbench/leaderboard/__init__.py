"""A phase's leaderboard, on the organizers' side: every submission scored and ranked with its
significance (``standings``), the relevance round's effect (``round_report``), topic-set
stability (``topic_stability``), human-corrected figures (``human_corrected``), judging a
phase's bulk download (``judge_submissions``), and the tables and plots written from them
(``tables``: JSON, CSV, HTML; ``latex``; ``plots``; ``text``, ``usage``, ``round_html``,
``human_corrected_tables``, ``topic_stability_tables``); synthetic scored submissions at 9 and
180 systems for its tests and benchmarks (``synthetic_outcomes``)."""
