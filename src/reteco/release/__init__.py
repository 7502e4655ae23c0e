"""A release to reference data, and the synthetic release: ``prepare`` (``reteco prepare``: a
release's splits to each sub-track's reference folder) and ``synthetic`` (``reteco synth``: the
deterministic synthetic release and the starting kit's sample runs and answers). Part of the
scorer, not of the workbench: participants run both (starting_kit/README.md), so the starting
kit's copy of reteco carries them."""
