"""How each benchmark decides that a model's output is right: pure functions of what the run recorded and
the labelled expectation, with tests (tests/test_scorers_*.py) that feed them wrong answers. No scorer
imports the product's own judgements: a benchmark that grades with the code it measures measures nothing."""
