"""The miscalibration chapter's closing paragraph names every verdict it is given, negligible
ones included (a claim whose only verdict was negligible once read '“...”: .')."""

from metacog.hypotheses import miscalibration as hm
from metacog.hypotheses.verdict import NEGLIGIBLE, decide_meaningful


def test_a_negligible_verdict_is_named_in_the_closing_paragraph():
    v = decide_meaningful("Atlas: confident errors fall on the same items across models", "dispersion ratio",
               1.008, 1.007, 1.010, line=1.0, direction="greater", margin=0.1)
    assert v.status == NEGLIGIBLE
    text = hm.verdict_paragraph([v])
    assert "”: negligible for Atlas." in text, text
