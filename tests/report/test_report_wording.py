"""What a reviewer reads first: the evidence in words, numbers for people, markup that renders."""

from __future__ import annotations

import re

from privacy_gate.report.html import render_report

from .test_report import GROUP, _inputs, _verdict


def _exposure_section(page: str) -> str:
    return page.split('id="exposure"')[1].split("</section>")[0]


def _with_exposure(**metrics) -> dict:
    v = _verdict()
    v["metrics"] = {
        **v["metrics"],
        "exposed.tested": 5000.0,
        "exposed.count": 12.0,
        "exposed.false_expected": 0.6,
        "exposed.tail_pvalue": 0.001,
        "exposed.tail_top": 40.0,
        "exposed.share": 0.002,
        "exposed.share_lower": 0.001,
        "exposed.share_upper": 0.004,
        "exposed.level": 0.01,
        "exposed.scan_tested": 20025.0,
        "exposed.scan_calibration": 10000.0,
        "exposed.scan_count": 3.0,
        "exposed.scan_false_bound": 0.2,
        "exposed.scan_tail_pvalue": 0.02,
        "exposed.scan_tail_top": 9.0,
        **metrics,
    }
    return v


def test_exposed_records_section_renders_its_markup_not_as_text():
    section = _exposure_section(render_report(_inputs(verdict=_with_exposure())))
    assert "&lt;b&gt;" not in section and "&lt;code&gt;" not in section
    assert (
        "<b>Exposed records</b>" in section
        and "<code>risk/exposed_records.parquet</code>" in section
    )


def test_counts_are_integers_with_thousands_separators_and_no_exponents():
    page = render_report(_inputs(verdict=_with_exposure()))
    text = re.sub(r'src="data:[^"]*"', "", page)  # not the inlined figures
    assert not re.search(r"\d(\.\d+)?e[+-]\d\d", text), re.findall(r".{30}\de[+-]\d\d.{10}", text)
    section = _exposure_section(page)
    assert "<td>5,000</td>" in section and "<td>20,025</td>" in section and "<td>12</td>" in section


def test_the_reasons_lead_with_one_sentence_per_flagged_group():
    rows = [
        {
            "group": GROUP,
            "attack": "dcr",
            "n_members": 64,
            "n_non_members": 60,
            "auc": 0.68,
            "tpr_at_fpr_0.01": 0.31,
            "test_p_adjusted": 0.0008,
        },
        {
            "group": GROUP,
            "attack": "domias",
            "n_members": 64,
            "n_non_members": 60,
            "auc": 0.55,
            "tpr_at_fpr_0.01": 0.05,
            "test_p_adjusted": 0.0008,
        },
        *(
            {
                "group": f"race=G{i}",
                "attack": "dcr",
                "n_members": 1500,
                "n_non_members": 1400,
                "auc": 0.5,
                "test_p_adjusted": 1.0,
            }
            for i in range(37)
        ),
    ]
    page = render_report(_inputs(subgroups=rows))
    # right under the cards and the reasons, before the tables
    evidence = page.split('<ul class="words evidence">')[1].split("</ul>")[0]
    assert (
        page.index('id="summary"')
        < page.index('<ul class="words evidence">')
        < page.index('<table class="rules">')
    )
    assert (
        f"{GROUP}: 64 members among the targets; an attacker (dcr) tells members from non-members "
        "with "
        "AUC 0.68 [0.59, 0.77]; 31% of its members caught at 1% false alarms; p = 0.0008 after "
        "Holm correction for "
        "38 groups"
    ) in evidence
    assert evidence.count("<li>") == 1  # one flagged group, one sentence
