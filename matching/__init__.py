"""ContractEval's engine: declared contracts, expected graphs, observed graphs, matching.

Pure Python (networkx, scipy, jsonschema); no Django. The formats, algorithms and
command line it implements are in the project's spec (FORMAT.md, ALGORITHMS.md, CLI.md).

>>> from pathlib import Path
>>> from matching.evaluate import evaluate
>>> from matching.formats import read_observed
>>> from matching.validate import load_contract
>>> data = Path(__file__).parent / "data"
>>> c = load_contract(data / "refund-mini.json")
>>> evaluate(c, "q1", read_observed(data / "refund-mini-observed-q1.json"))["verdict"]
'clean'

The package re-exports nothing: each name is imported from the module that defines it
(``matching.validate.load_contract``), so importing a light module (``matching.errors``,
``matching.input_limits``) never pulls networkx, numpy and jsonschema into a process
that evaluates nothing, such as the web app starting up.
"""

__version__ = "0.1.0"
