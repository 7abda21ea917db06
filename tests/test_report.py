import math

from metacog.report import fmt_p


def test_fmt_p():
    assert fmt_p(0.0421) == "0.042"
    assert fmt_p(0.0) == "< 0.001"
    assert fmt_p(0.00049, digits=3) == "< 0.001"
    assert fmt_p(math.nan) == "n/a"
    assert fmt_p(0.5, digits=2) == "0.50"
