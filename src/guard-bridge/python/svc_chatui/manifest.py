"""Tool packs: read and validate their TOOLKITS declarations (spec §2 "Tool declaration") and
build the tool manifest that the boot tool sync PUTs to /api/v1/runtime/tools.

A pack is an importable Python package whose top-level module exposes ``TOOLKITS``, a list of
plain dicts (rule 1: plain data, never an import of svc_chatui). Each toolkit names the
``module`` holding its ``Tools`` class; each tool entry names one governed action:

    TOOLKITS = [{
        "id": "acme_crm", "name": "Acme CRM", "module": "acme_tools.crm",
        "tools": [
            {"name": "crm.lookup_customer", "access": "read"},
            {"name": "crm.update", "access": "write", "method": "update_customer",
             "required_capabilities": ["crm:write"]},
        ],
    }]

Rule 3: a malformed declaration, a name declared twice, or a pack (or toolkit module) that
fails to import raises ManifestError naming the pack and the entry; the container stops. A
public Tools method that no declaration covers is left out (a warning: from v0.1.3 set
``method``). A method that passes another literal name to the governor is warned about too
(rule 2: such a call is refused as tool_not_registered at run time).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import textwrap
from dataclasses import dataclass, field

PACKS_ENV = "SVC_CHATUI_TOOL_PACKS"
# Always applied with fullmatch: in Python "$" also matches before a trailing newline, so
# "crm.update\n" would pass a plain match here and then fail the contract's check (JavaScript's
# "$" does not) with an error that names neither pack nor entry.
# Same pattern as src/contract/manifest.ts ManifestTool.name.
TOOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
# The toolkit id becomes the front end's tool id, which must be a lower-case identifier.
TOOLKIT_ID_RE = re.compile(r"^[a-z_][a-z0-9_]{0,99}$")
METHOD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
TOOLKIT_FIELDS = {"id", "name", "module", "description", "source", "tools"}
TOOL_FIELDS = {"name", "access", "required_capabilities", "method"}
ACCESS = ("read", "write")


class ManifestError(Exception):
    """A pack the container must not start with; names the pack and the entry."""

    def __init__(self, pack: str, entry: str, reason: str):
        self.pack, self.entry, self.reason = pack, entry, reason
        super().__init__(f'tool pack "{pack}": {entry}: {reason}')


@dataclass(frozen=True)
class ToolDecl:
    name: str
    access: str
    required_capabilities: tuple[str, ...]
    method: str  # the Tools method: `method`, or the last part of `name`


@dataclass
class Toolkit:
    pack: str
    id: str
    name: str
    module: str
    description: str = ""
    source: str = ""
    tools: list[ToolDecl] = field(default_factory=list)


def pack_names(value: str | None = None) -> list[str]:
    """The packs of SVC_CHATUI_TOOL_PACKS (comma-separated module names), in order, once each."""
    raw = os.environ.get(PACKS_ENV, "") if value is None else value
    out: list[str] = []
    for part in raw.split(","):
        name = part.strip()
        if name and name not in out:
            out.append(name)
    return out


def _import(pack: str, module: str, entry: str):
    try:
        return importlib.import_module(module)
    except BaseException as e:  # SystemExit or KeyboardInterrupt from a pack is a broken pack too
        if isinstance(e, KeyboardInterrupt):
            raise
        raise ManifestError(pack, entry, f'import of module "{module}" failed: {type(e).__name__}: {e}') from e


def _quoted(label: str) -> str:
    """A declared id or name as it appears in an error: in double quotes, with newlines and other
    control characters escaped, so the refusal stays one line (the supervisor shows the last)."""
    return json.dumps(label, ensure_ascii=False)


def _entry(i: int, decl: object, key: str = "id") -> str:
    label = decl.get(key) if isinstance(decl, dict) else None
    return f'TOOLKITS[{i}]' + (f' (id {_quoted(label)})' if isinstance(label, str) and label else "")


def _string(pack: str, entry: str, decl: dict, key: str, required: bool) -> str:
    value = decl.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        what = "is missing" if key not in decl else f"must be a non-empty string, not {type(value).__name__}"
        raise ManifestError(pack, entry, f'"{key}" {what}')
    return value


def validate_toolkits(pack: str, toolkits: object) -> list[Toolkit]:
    """Pure shape validation of one pack's TOOLKITS (no imports)."""
    if not isinstance(toolkits, (list, tuple)):
        raise ManifestError(pack, "TOOLKITS", f"must be a list of toolkit dicts, not {type(toolkits).__name__}")
    out: list[Toolkit] = []
    for i, decl in enumerate(toolkits):
        entry = _entry(i, decl)
        if not isinstance(decl, dict):
            raise ManifestError(pack, entry, f"a toolkit must be a dict, not {type(decl).__name__}")
        unknown = sorted(set(decl) - TOOLKIT_FIELDS)
        if unknown:
            raise ManifestError(pack, entry, f"unknown field(s) {', '.join(map(repr, unknown))}")
        tk_id = _string(pack, entry, decl, "id", True)
        if not TOOLKIT_ID_RE.fullmatch(tk_id):
            raise ManifestError(pack, entry, '"id" must be lower-case letters, digits and "_", starting with a letter or "_" (it becomes the front end\'s tool id)')
        toolkit = Toolkit(
            pack=pack,
            id=tk_id,
            name=_string(pack, entry, decl, "name", True),
            module=_string(pack, entry, decl, "module", True),
            description=_string(pack, entry, decl, "description", False),
            source=_string(pack, entry, decl, "source", False),
        )
        tools = decl.get("tools", [])
        if not isinstance(tools, (list, tuple)):
            raise ManifestError(pack, entry, f'"tools" must be a list of tool entries, not {type(tools).__name__}')
        for j, t in enumerate(tools):
            toolkit.tools.append(_validate_tool(pack, f"{entry}.tools[{j}]", t))
        out.append(toolkit)
    return out


def _validate_tool(pack: str, entry: str, t: object) -> ToolDecl:
    if isinstance(t, dict) and isinstance(t.get("name"), str):
        entry = f'{entry} (name {_quoted(t["name"])})'
    if not isinstance(t, dict):
        raise ManifestError(pack, entry, f"a tool entry must be a dict, not {type(t).__name__}")
    unknown = sorted(set(t) - TOOL_FIELDS)
    if unknown:
        raise ManifestError(pack, entry, f"unknown field(s) {', '.join(map(repr, unknown))}")
    name = _string(pack, entry, t, "name", True)
    if len(name) > 200 or not TOOL_NAME_RE.fullmatch(name):
        raise ManifestError(pack, entry, '"name" must be <method> or <prefix>.<method> (letters, digits, "_"; "-" in the prefix)')
    access = t.get("access")
    if access not in ACCESS:
        raise ManifestError(pack, entry, f'"access" must be "read" or "write", not {access!r}')
    caps = t.get("required_capabilities", [])
    if not isinstance(caps, (list, tuple)) or not all(isinstance(c, str) and c.strip() and len(c) <= 200 for c in caps):
        raise ManifestError(pack, entry, '"required_capabilities" must be a list of non-empty strings')
    if len(caps) > 64:
        raise ManifestError(pack, entry, '"required_capabilities" has more than 64 entries')
    method = t.get("method")
    if method is None:
        method = name.rsplit(".", 1)[-1]
        if not METHOD_RE.fullmatch(method):
            raise ManifestError(pack, entry, f'"{method}" is not a Python method name; set "method" to the Tools method')
    elif not isinstance(method, str) or not METHOD_RE.fullmatch(method):
        raise ManifestError(pack, entry, '"method" must be the name of a Tools method')
    return ToolDecl(name=name, access=access, required_capabilities=tuple(caps), method=method)


def public_methods(cls: type) -> list[str]:
    """The methods the front end turns into tool specs: callable, not a class, not `_`-prefixed."""
    out = []
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        value = getattr(cls, attr, None)
        if callable(value) and not inspect.isclass(value):
            out.append(attr)
    return out


def _literal_run_names(fn) -> list[str]:
    """Literal first arguments of `<x>.run("...")` / `run("...")` calls in a method's source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if called == "run" and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.append(node.args[0].value)
    return names


def check_toolkit_module(toolkit: Toolkit, index: int) -> list[str]:
    """Import the toolkit's module and match its Tools methods with the declarations.

    Raises ManifestError for a module that fails to import, a missing Tools class, or a
    declaration whose method Tools does not have. Returns the warnings.
    """
    entry = f'TOOLKITS[{index}] (id "{toolkit.id}")'
    mod = _import(toolkit.pack, toolkit.module, entry)
    tools_cls = getattr(mod, "Tools", None)
    if not inspect.isclass(tools_cls):
        raise ManifestError(toolkit.pack, entry, f'module "{toolkit.module}" has no class Tools')
    methods = set(public_methods(tools_cls))
    warnings = []
    by_method: dict[str, ToolDecl] = {}
    for j, decl in enumerate(toolkit.tools):
        if decl.method not in methods:
            raise ManifestError(
                toolkit.pack,
                f'{entry}.tools[{j}] (name "{decl.name}")',
                f'Tools in "{toolkit.module}" has no public method "{decl.method}"'
                + ("" if decl.method != decl.name.rsplit(".", 1)[-1] else '; set "method" when the method name differs'),
            )
        if decl.method in by_method:
            raise ManifestError(
                toolkit.pack,
                f'{entry}.tools[{j}] (name "{decl.name}")',
                f'method "{decl.method}" is already declared by "{by_method[decl.method].name}"',
            )
        by_method[decl.method] = decl
        passed = [n for n in _literal_run_names(getattr(tools_cls, decl.method)) if n != decl.name]
        for other in passed:
            warnings.append(
                f'tool pack "{toolkit.pack}": {entry}: Tools.{decl.method} passes "{other}" to the governor but is '
                f'declared as "{decl.name}"; its calls will be refused as tool_not_registered'
            )
    for m in sorted(methods - set(by_method)):
        warnings.append(
            f'tool pack "{toolkit.pack}": {entry}: Tools method "{m}" is left out of the manifest because no '
            f'declaration matches it (from v0.1.3, set "method" in the declaration)'
        )
    return warnings


def load_toolkits(packs: list[str]) -> tuple[list[Toolkit], list[str]]:
    """Import every pack, validate everything, refuse duplicates. Returns (toolkits, warnings)."""
    toolkits: list[Toolkit] = []
    warnings: list[str] = []
    seen_names: dict[str, str] = {}
    seen_ids: dict[str, str] = {}
    for pack in packs:
        mod = _import(pack, pack, "import")
        if not hasattr(mod, "TOOLKITS"):
            raise ManifestError(pack, "TOOLKITS", f'the module "{pack}" does not define TOOLKITS')
        for i, tk in enumerate(validate_toolkits(pack, mod.TOOLKITS)):
            entry = f'TOOLKITS[{i}] (id "{tk.id}")'
            if tk.id in seen_ids:
                raise ManifestError(pack, entry, f'toolkit id "{tk.id}" is declared twice (also in {seen_ids[tk.id]})')
            seen_ids[tk.id] = f'pack "{pack}"'
            for j, decl in enumerate(tk.tools):
                where = f'pack "{pack}" {entry}.tools[{j}]'
                if decl.name in seen_names:
                    raise ManifestError(
                        pack, f'{entry}.tools[{j}] (name "{decl.name}")', f"name declared twice (first in {seen_names[decl.name]})"
                    )
                seen_names[decl.name] = where
            warnings.extend(check_toolkit_module(tk, i))
            toolkits.append(tk)
    return toolkits, warnings


def manifest_of(toolkits: list[Toolkit], image_version: str | None = None) -> dict:
    """The ToolManifest body (src/contract/manifest.ts), tools in declaration order."""
    doc: dict = {
        "tools": [
            {
                "name": d.name,
                "access": d.access,
                "required_capabilities": list(d.required_capabilities),
                "toolkit_id": tk.id,
                "pack": tk.pack,
            }
            for tk in toolkits
            for d in tk.tools
        ]
    }
    if image_version:
        doc["image_version"] = image_version
    return doc


_governed_cache: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def governed(packs: list[str] | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(toolkit ids, tool spec names) the service governs, for the guard and the Pipe.

    Fails closed: packs that do not load govern nothing (the boot step has already refused to
    start with such packs, so this only matters for a hand-broken environment).
    """
    packs = pack_names() if packs is None else packs
    key = ",".join(packs)
    if key not in _governed_cache:
        try:
            toolkits, _ = load_toolkits(packs)
        except ManifestError:
            toolkits = []
        ids = frozenset(tk.id for tk in toolkits)
        # The front end names a spec by its method; on a clash it prefixes "<tool id>_".
        names = frozenset(
            n for tk in toolkits for d in tk.tools for n in (d.method, f"{tk.id}_{d.method}")
        )
        _governed_cache[key] = (ids, names)
    return _governed_cache[key]
