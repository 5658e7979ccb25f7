"""The one error type of the engine.

Every problem with an input document — not JSON, the wrong ``format``, a schema rule,
a span outside its text, an unknown id, a cycle, an unresolved decision — is raised as
:class:`ContractEvalError`, whose message names the file, the JSON path and the rule.

>>> err = ContractEvalError("'end' is a required property", file="c.json",
...                         path="$.nodes[0].evidence[0]", rule="required")
>>> str(err)
"c.json: $.nodes[0].evidence[0]: 'end' is a required property [required]"
"""

from __future__ import annotations


class ContractEvalError(ValueError):
    """An invalid input document, or a query that contradicts its contract."""

    def __init__(
        self, message: str, *, file: str | None = None, path: str = "$", rule: str = "invalid"
    ) -> None:
        self.message = message
        self.file = file
        self.path = path
        self.rule = rule
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}{self.path}: {self.message} [{self.rule}]"

    def with_file(self, file: str | None) -> ContractEvalError:
        """The same error, naming ``file`` (kept if it already names one)."""
        if file is None or self.file is not None:
            return self
        return ContractEvalError(self.message, file=file, path=self.path, rule=self.rule)


def json_path(parts: object) -> str:
    """Render a sequence of keys and indices as a JSON path.

    >>> json_path(["nodes", 3, "evidence", 0])
    '$.nodes[3].evidence[0]'
    """
    out = "$"
    for p in parts:  # type: ignore[attr-defined]
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out
