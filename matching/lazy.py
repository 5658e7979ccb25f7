"""Names a package exports but imports on first use (PEP 562).

A package that re-exports its modules' public names would import all of them, and
their dependencies, when anything imports one light submodule; with these two
functions as the package's ``__getattr__`` and ``__dir__`` each name's module loads
when the name is first read, and the name is then stored on the package so later
reads are plain attribute look-ups.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for ``names``.

    ``names`` maps each exported name to the submodule (relative to ``package``) that
    defines it.

    >>> getattr_, dir_ = lazy_exports("matching", {"ContractEvalError": "errors"})
    >>> getattr_("ContractEvalError").__name__
    'ContractEvalError'
    >>> "ContractEvalError" in dir_()
    True
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'matching' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *names])

    return __getattr__, __dir__
