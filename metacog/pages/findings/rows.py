"""One verdict of a chapter as a findings row (:class:`Found`), and how a row's panel is named
and its design read: shared by the collectors of both papers' chapters."""

from __future__ import annotations

from dataclasses import dataclass

from metacog.data.designs import UNKNOWN, Design, design as design_of


@dataclass
class Found:
    """One chapter verdict with the panel (or source) it was decided on and that panel's design."""

    chapter: str
    verdict: object
    panel: str
    design: Design
    #: the models the verdict rests on, where the chapter names them (a P(Yes) answerer among
    #: them makes the row a different measurement from the papers', :func:`_agreement`)
    answerers: tuple = ()


def _prefix_design(claim: str, known: dict[str, Design]) -> tuple[str, Design]:
    """The verdict's panel label (its claim before ': ') and the design of the longest known
    panel or source name that starts the claim."""
    label = claim.split(": ", 1)[0]  # the panel with what the chapter adds (subset, model)
    hits = [k for k in known if claim.startswith(k)]
    if not hits:
        return label, Design(UNKNOWN, "not matched to a panel")
    return label, known[max(hits, key=len)]


def _panel_name(source: str) -> str:
    """A "source:probe" string named as :attr:`metacog.hypotheses.panels.Panel.name` names a
    panel ("squad · prospective"), so that one panel has one name on the page."""
    from metacog.data import recorded
    from metacog.data.responses import source_label

    name, _, probe = str(source).partition(":")
    label = source_label(source)
    try:
        run = recorded.runs().get(name)
    except (OSError, ValueError):
        run = None
    parts = [label]
    if run is not None and str(run.benchmark).lower() != label.lower():
        parts.append(str(run.benchmark))
    if probe:
        parts.append(probe.replace("_", " "))
    return " · ".join(parts)


def _source_design(source: str) -> Design:
    name, _, probe = str(source).partition(":")
    return design_of(source, probe or "c0")
