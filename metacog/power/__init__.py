"""Power: how many models and items does it take to see individualised metacognition?

- :mod:`~metacog.power.simulate`: simulated populations with known metacognitive structure;
- :mod:`~metacog.power.curves`: detection rates of the chapters' tests on those populations;
- :mod:`~metacog.power.matching`: the simulator fitted to a real dataset, so power is computed
  for *that* dataset's design;
- :mod:`~metacog.power.examples`: example response files drawn from the simulator
  (``metacog example-data``).

The power chapter itself (:mod:`metacog.hypotheses.power`) calls these.
"""
