"""The leaderboard's LaTeX drops into the paper (issue 37 item 4): at 180 systems with ``--top
20``, ``leaderboard.tex`` ``\\input`` into an ACL-like two-column body (11 pt Times, a 16 cm text
width in two columns, booktabs) compiles with pdflatex, with no overfull box; the appendix,
``\\input`` after ``\\onecolumn``, too. Skipped, saying so, where pdflatex (or the packages) is
absent: ``apt-get install texlive-latex-base texlive-latex-recommended texlive-fonts-recommended``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.synthetic_outcomes import synthetic_outcomes
from reteco.workbench.leaderboard.tables import APPENDIX_TEX_FILE, TEX_FILE, write_tables

PAPER = r"""\documentclass[11pt,twocolumn]{article}
\usepackage{times}
\usepackage[T1]{fontenc}
\usepackage{booktabs,longtable}
\setlength{\textwidth}{16cm}\setlength{\textheight}{24.7cm}\setlength{\columnsep}{0.6cm}
\setlength{\oddsidemargin}{-0.4cm}\setlength{\evensidemargin}{-0.4cm}\setlength{\topmargin}{-1.5cm}
\begin{document}
\section{Results}
The official ranking is in Table~\ref{tab:reteco-SUB}. The body goes on in two columns around it.
\input{leaderboard}
Text after the table, still in two columns.
APPENDIX
\end{document}
"""


def _pdflatex() -> str:
    found = shutil.which("pdflatex")
    if found is None:
        pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended "
                    "texlive-fonts-recommended): the LaTeX is checked by width estimates only")
    for package in ("booktabs.sty", "longtable.sty", "times.sty"):
        if subprocess.run(["kpsewhich", package], capture_output=True).returncode != 0:
            pytest.skip(f"pdflatex is installed without {package} (texlive-latex-recommended, texlive-fonts-recommended)")
    return found


def _compile(pdflatex: str, folder: Path, body: str) -> str:
    (folder / "paper.tex").write_text(body, encoding="utf-8")
    for _ in range(2):  # the second pass resolves the references
        done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=folder,
                              capture_output=True, text=True, timeout=300)
        log = (folder / "paper.log").read_text(encoding="latin-1")
        assert done.returncode == 0, log[-3000:]
    return log


@pytest.mark.parametrize("subtrack", ["1a", "2b", "2c"])
def test_the_main_table_compiles_in_a_two_column_paper_and_the_appendix_after_onecolumn(subtrack, tmp_path):
    pdflatex = _pdflatex()
    entries, outcomes, units = synthetic_outcomes(subtrack, 60, 3)
    board = lb.build_leaderboard(subtrack, entries, outcomes, unit_keys=units, resamples=300, seed=5)
    board["plots"] = {}
    write_tables(board, tmp_path, top=20)
    main = (tmp_path / TEX_FILE).read_text(encoding="utf-8")
    assert main.count("\\begin{table*}") == 1 and "\\begin{longtable}" not in main
    log = _compile(pdflatex, tmp_path, PAPER.replace("SUB", subtrack).replace("APPENDIX", ""))
    assert "Overfull \\hbox" not in log and "longtable not in 1-column mode" not in log
    assert "Float too large" not in log
    # The appendix: longtables (180 rows) in one-column mode.
    assert "\\begin{longtable}" in (tmp_path / APPENDIX_TEX_FILE).read_text(encoding="utf-8")
    log = _compile(pdflatex, tmp_path, PAPER.replace("SUB", subtrack).replace(
        "APPENDIX", "\\onecolumn\n\\appendix\n\\section{All systems}\n\\input{leaderboard_appendix}"))
    assert "Overfull \\hbox" not in log, [line for line in log.splitlines() if "Overfull" in line]
