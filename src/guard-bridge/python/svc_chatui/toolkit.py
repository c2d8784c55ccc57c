"""What a seeded front-end tool's source imports: the pack's Tools class, narrowed to the
methods its toolkit declares.

Open WebUI turns every public method of ``Tools`` into a tool the model may call. A method no
declaration covers is not in the manifest, so it is not governed: the shim hides it (the
boot step has already warned about it).
"""

from __future__ import annotations

import importlib

from .manifest import public_methods


def only_declared(tools_cls: type, declared: tuple[str, ...] | list[str]) -> type:
    hidden = {m: None for m in public_methods(tools_cls) if m not in set(declared)}
    return type("Tools", (tools_cls,), {**hidden, "__module__": tools_cls.__module__, "__doc__": tools_cls.__doc__})


def governed_tools(module: str, declared: tuple[str, ...] | list[str]) -> type:
    return only_declared(importlib.import_module(module).Tools, declared)
