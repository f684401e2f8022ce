"""The HTML leaderboard's headline rows, read from the rendered page in Chromium (issue 46:
every benchmark's headline rows, with n, interval, chance and ceiling, in ``kgprobe report``'s
HTML page too). The results file is tests/test_ontolama_report.py's, whose numbers are worked
out by hand there; the expected cells below follow from its comments. Marked slow (a browser).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eval.report import main as report_main
from tests.test_html_browser import driver  # noqa: F401  (the Chromium fixture)
from tests.test_ontolama_report import GO, PIZZA, db  # noqa: F401  (the results fixture)


def leaderboard(driver: Any) -> list[dict[str, str]]:  # noqa: F811
    """The rendered leaderboard: one dict per row, by column heading."""
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, "#leaderboard table")
    head = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    return [dict(zip(head, [td.text for td in tr.find_elements(By.TAG_NAME, "td")],
                     strict=True))
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]


@pytest.mark.slow  # starts a browser
def test_headline_rows_on_the_page(db: Path, tmp_path: Path, driver: Any) -> None:  # noqa: F811
    html = tmp_path / "report.html"
    assert report_main(["--results", str(db), "--out", str(tmp_path / "md"), "--html",
                        str(html), "--no-plots"]) == 0
    driver.get(html.as_uri())
    rows = leaderboard(driver)
    shown = {(r["probe"], r["metric"], r["value"], r["n"]) for r in rows if r["model"] == "m"}
    # zero-shot, the mean over the six prompts: pizza 4/4, 3/4, 2/4, 1/4, 0/4, 2/4 -> 0.5 over
    # its 4 test instances; go complex right on E and F, wrong on G under every prompt -> 2/3
    assert (PIZZA, "ontolama_zero_shot", "0.500", "4") in shown, rows
    assert (GO, "ontolama_zero_shot", "0.667", "3") in shown, rows
    # the majority baseline beside it: pizza's gold 1, 0, 1, 0 -> 2/4; go's 1, 1, 0 -> 2/3
    assert (PIZZA, "ontolama_majority_baseline", "0.500", "4") in shown, rows
    assert (GO, "ontolama_majority_baseline", "0.667", "3") in shown, rows
    # no other model's rows, and no headline row without its n
    assert {r["model"] for r in rows} == {"m"}
    assert all(r["n"] not in ("", "–") for r in rows if r["metric"].startswith("ontolama_"))
