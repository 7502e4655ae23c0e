"""``make score`` (reteco.commands.demo): each reason the judge or a text metric was left out is
printed once (issue 35, point 10: 2b and 2c printed the judge's and BERTScore's reasons twice)."""

from __future__ import annotations

import re

from reteco.commands import demo


def test_make_score_says_each_reason_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RETECO_BERTSCORE_MODEL", raising=False)
    assert demo.main(["--build", str(tmp_path / "build")]) == 0
    out = capsys.readouterr().out
    for subtrack in ("2b", "2c"):
        section = out.split(f"== {subtrack}:")[1].split("\n== ")[0]
        assert "judge: did not run (the warning above says why)" in section
        reasons = re.findall(r"the judge did not run: ([^.]*)", section)
        assert len(reasons) == 1, section
        assert section.count("no BERTScore model configured") == 1, section
        assert "text metrics unavailable: " in section and "bertscore_f1" in section.split("text metrics unavailable: ")[1]
