"""Lazy attributes for package ``__init__`` modules: importing a package loads none of its heavy parts."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """Return ``(__getattr__, __dir__)`` that import ``exports[name]`` (a module path) on first access."""

    def __getattr__(name):
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value  # later lookups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
