"""Tool-pack declarations: validation, errors naming pack and entry, warnings, the manifest."""

from __future__ import annotations

import itertools
import json
import textwrap

import pytest

from svc_chatui import boot, manifest, toolkit
from svc_chatui.manifest import ManifestError

_counter = itertools.count()


def make_pack(tmp_path, monkeypatch, toolkits_src: str, modules: dict[str, str] | None = None, init_extra: str = "") -> str:
    """Write a pack package under tmp_path with a unique name; returns its name."""
    name = f"pack_{next(_counter)}_{tmp_path.name[-6:].replace('-', '_')}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(init_extra) + "\nTOOLKITS = " + toolkits_src.replace("PACK", name) + "\n")
    for mod, src in (modules or {}).items():
        (pkg / f"{mod}.py").write_text(textwrap.dedent(src))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


TOOLS_SRC = """
class Tools:
    def lookup(self, q: str) -> str:
        return q
    def update_record(self, q: str) -> str:
        return q
"""


def test_example_pack_exports_the_declared_tools():
    toolkits, warnings = manifest.load_toolkits(["acme_tools"])
    doc = manifest.manifest_of(toolkits, "0.1.30")
    assert warnings == []
    assert doc == {
        "tools": [
            {"name": "crm.lookup_customer", "access": "read", "required_capabilities": [], "toolkit_id": "acme_crm", "pack": "acme_tools"},
            {"name": "crm.update", "access": "write", "required_capabilities": ["crm:write"], "toolkit_id": "acme_crm", "pack": "acme_tools"},
            {"name": "tickets.list_open", "access": "read", "required_capabilities": [], "toolkit_id": "acme_tickets", "pack": "acme_tools"},
        ],
        "image_version": "0.1.30",
    }
    # `method` maps the declaration to the differently named Tools method.
    crm = toolkits[0]
    assert [d.method for d in crm.tools] == ["lookup_customer", "update_customer"]


MALFORMED = {
    "not a list": ("{'id': 'x'}", "TOOLKITS", "must be a list"),
    "toolkit not a dict": ("['x']", "TOOLKITS[0]", "must be a dict"),
    "missing id": ("[{'name': 'N', 'module': 'PACK.t', 'tools': []}]", "TOOLKITS[0]", '"id" is missing'),
    "id not an identifier": ("[{'id': 'Bad-Id', 'name': 'N', 'module': 'PACK.t', 'tools': []}]", 'TOOLKITS[0] (id "Bad-Id")', '"id" must be'),
    "missing name": ("[{'id': 'k', 'module': 'PACK.t', 'tools': []}]", 'TOOLKITS[0] (id "k")', '"name" is missing'),
    "missing module": ("[{'id': 'k', 'name': 'N', 'tools': []}]", 'TOOLKITS[0] (id "k")', '"module" is missing'),
    "name not a string": ("[{'id': 'k', 'name': 5, 'module': 'PACK.t'}]", 'TOOLKITS[0] (id "k")', '"name" must be a non-empty string'),
    "unknown toolkit field": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tool': []}]", 'TOOLKITS[0] (id "k")', "unknown field(s) 'tool'"),
    "tools not a list": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': 'lookup'}]", 'TOOLKITS[0] (id "k")', '"tools" must be a list'),
    "tool not a dict": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': ['lookup']}]", 'TOOLKITS[0] (id "k").tools[0]', "must be a dict"),
    "tool name missing": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'access': 'read'}]}]", 'TOOLKITS[0] (id "k").tools[0]', '"name" is missing'),
    "tool name pattern": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'a.b.c', 'access': 'read'}]}]", '(name "a.b.c")', '"name" must be'),
    "access invalid": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'admin'}]}]", 'tools[0] (name "x.lookup")', '"access" must be "read" or "write"'),
    "access missing": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup'}]}]", 'tools[0] (name "x.lookup")', '"access" must be'),
    "capabilities not a list": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read', 'required_capabilities': 'crm'}]}]", '(name "x.lookup")', '"required_capabilities"'),
    "method not a name": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read', 'method': 'no such'}]}]", '(name "x.lookup")', '"method" must be'),
    "unknown tool field": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'acess': 'read'}]}]", '(name "x.lookup")', "unknown field(s) 'acess'"),
    # Python's "$" matches before a trailing newline: every pattern must match the whole value.
    "tool name with a trailing newline": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup\\n', 'access': 'read', 'method': 'lookup'}]}]", '(name "x.lookup\\n")', '"name" must be'),
    "toolkit id with a trailing newline": ("[{'id': 'k\\n', 'name': 'N', 'module': 'PACK.t', 'tools': []}]", 'TOOLKITS[0] (id "k\\n")', '"id" must be'),
    "method with a trailing newline": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read', 'method': 'lookup\\n'}]}]", '(name "x.lookup")', '"method" must be'),
    # JSON-Schema-style keys are not fields of a declaration (spec §2): refused like any other.
    "$schema on a toolkit": ("[{'$schema': 'https://example.com/toolkit.json', 'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': []}]", 'TOOLKITS[0] (id "k")', "unknown field(s) '$schema'"),
    "$ref on a tool": ("[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'$ref': '#/defs/lookup', 'name': 'x.lookup', 'access': 'read'}]}]", '(name "x.lookup")', "unknown field(s) '$ref'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_declaration_names_pack_and_entry(case, tmp_path, monkeypatch):
    src, entry, reason = MALFORMED[case]
    pack = make_pack(tmp_path, monkeypatch, src, {"t": TOOLS_SRC})
    with pytest.raises(ManifestError) as err:
        manifest.load_toolkits([pack])
    msg = str(err.value)
    assert f'tool pack "{pack}"' in msg
    assert entry in msg
    assert reason in msg


def test_name_declared_twice_in_one_pack(tmp_path, monkeypatch):
    pack = make_pack(
        tmp_path, monkeypatch,
        "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read'}, {'name': 'x.lookup', 'access': 'write', 'method': 'update_record'}]}]",
        {"t": TOOLS_SRC},
    )
    with pytest.raises(ManifestError, match=r'tools\[1\] \(name "x.lookup"\): name declared twice'):
        manifest.load_toolkits([pack])


def test_name_declared_twice_across_packs(tmp_path, monkeypatch):
    src = "[{'id': 'k_ID', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'shared.lookup', 'access': 'read'}]}]"
    a = make_pack(tmp_path, monkeypatch, src.replace("ID", "a"), {"t": TOOLS_SRC})
    b = make_pack(tmp_path, monkeypatch, src.replace("ID", "b"), {"t": TOOLS_SRC})
    with pytest.raises(ManifestError) as err:
        manifest.load_toolkits([a, b])
    assert f'tool pack "{b}"' in str(err.value) and f'first in pack "{a}"' in str(err.value)


def test_toolkit_id_declared_twice(tmp_path, monkeypatch):
    src = "[{'id': 'same', 'name': 'N', 'module': 'PACK.t', 'tools': []}, {'id': 'same', 'name': 'M', 'module': 'PACK.t', 'tools': []}]"
    pack = make_pack(tmp_path, monkeypatch, src, {"t": TOOLS_SRC})
    with pytest.raises(ManifestError, match=r'TOOLKITS\[1\] \(id "same"\): toolkit id "same" is declared twice'):
        manifest.load_toolkits([pack])


def test_pack_that_fails_to_import(tmp_path, monkeypatch):
    pack = make_pack(tmp_path, monkeypatch, "[]", init_extra="raise RuntimeError('db driver missing')")
    with pytest.raises(ManifestError) as err:
        manifest.load_toolkits([pack])
    assert f'tool pack "{pack}": import:' in str(err.value) and "RuntimeError: db driver missing" in str(err.value)


def test_missing_pack_module():
    with pytest.raises(ManifestError, match='tool pack "no_such_pack_xyz": import: .*ModuleNotFoundError'):
        manifest.load_toolkits(["no_such_pack_xyz"])


def test_toolkit_module_that_fails_to_import(tmp_path, monkeypatch):
    pack = make_pack(tmp_path, monkeypatch, "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': []}]", {"t": "import not_installed_dep\n"})
    with pytest.raises(ManifestError, match=r'TOOLKITS\[0\] \(id "k"\): import of module ".*\.t" failed: ModuleNotFoundError'):
        manifest.load_toolkits([pack])


def test_pack_without_toolkits_attribute(tmp_path, monkeypatch):
    pack = make_pack(tmp_path, monkeypatch, "[]")
    (tmp_path / pack / "__init__.py").write_text("X = 1\n")
    with pytest.raises(ManifestError, match="does not define TOOLKITS"):
        manifest.load_toolkits([pack])


def test_module_without_tools_class(tmp_path, monkeypatch):
    pack = make_pack(tmp_path, monkeypatch, "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': []}]", {"t": "class Other: pass\n"})
    with pytest.raises(ManifestError, match="has no class Tools"):
        manifest.load_toolkits([pack])


def test_declared_method_missing_on_tools(tmp_path, monkeypatch):
    src = "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.update', 'access': 'write'}]}]"
    pack = make_pack(tmp_path, monkeypatch, src, {"t": TOOLS_SRC})
    with pytest.raises(ManifestError, match=r'tools\[0\] \(name "x.update"\): Tools in ".*" has no public method "update"; set "method"'):
        manifest.load_toolkits([pack])


def test_method_field_maps_to_the_tools_method(tmp_path, monkeypatch):
    src = "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read'}, {'name': 'x.update', 'access': 'write', 'method': 'update_record'}]}]"
    pack = make_pack(tmp_path, monkeypatch, src, {"t": TOOLS_SRC})
    toolkits, warnings = manifest.load_toolkits([pack])
    assert warnings == []
    assert [(d.name, d.method) for d in toolkits[0].tools] == [("x.lookup", "lookup"), ("x.update", "update_record")]


def test_undeclared_method_is_warned_about_and_left_out(tmp_path, monkeypatch):
    src = "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup', 'access': 'read'}]}]"
    pack = make_pack(tmp_path, monkeypatch, src, {"t": TOOLS_SRC})
    toolkits, warnings = manifest.load_toolkits([pack])
    assert [t["name"] for t in manifest.manifest_of(toolkits)["tools"]] == ["x.lookup"]
    assert len(warnings) == 1
    assert 'Tools method "update_record" is left out of the manifest because no declaration matches it' in warnings[0]
    assert 'set "method"' in warnings[0]


def test_method_passing_another_name_is_warned_about():
    toolkits, warnings = manifest.load_toolkits(["misnamed_pack"])
    assert any('Tools.search passes "notes.find" to the governor but is declared as "notes.search"' in w for w in warnings)
    assert any('"export_all" is left out' in w for w in warnings)


def test_pack_declaring_no_tools_gives_an_empty_manifest(tmp_path, monkeypatch, capsys):
    pack = make_pack(tmp_path, monkeypatch, "[{'id': 'k', 'name': 'N', 'module': 'PACK.t'}]", {"t": TOOLS_SRC})
    assert boot.main(["--export-manifest", "--packs", pack]) == 0
    assert json.loads(capsys.readouterr().out) == {"tools": []}


def test_boot_refuses_a_broken_pack_with_one_line(capsys):
    assert boot.main(["--export-manifest", "--packs", "broken_pack"]) == boot.EXIT_BROKEN_PACK
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        'tool pack "broken_pack": TOOLKITS[0] (id "broken").tools[1] (name "broken.delete_everything"): '
        "\"access\" must be \"read\" or \"write\", not 'admin'; refusing to start"
    ]


def test_boot_prints_warnings_on_stderr_and_manifest_on_stdout(capsys):
    assert boot.main(["--export-manifest", "--packs", "misnamed_pack"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["tools"][0]["name"] == "notes.search"
    assert all(line.startswith("warning: ") for line in out.err.strip().splitlines())


def test_refusal_for_a_name_with_a_newline_is_one_line(tmp_path, monkeypatch, capsys):
    pack = make_pack(tmp_path, monkeypatch, "[{'id': 'k', 'name': 'N', 'module': 'PACK.t', 'tools': [{'name': 'x.lookup\\n', 'access': 'read'}]}]", {"t": TOOLS_SRC})
    assert boot.main(["--export-manifest", "--packs", pack]) == boot.EXIT_BROKEN_PACK
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f'tool pack "{pack}": TOOLKITS[0] (id "k").tools[0] (name "x.lookup\\n"): ')


def test_exported_manifest_keeps_dollar_and_unicode_strings_as_declared(tmp_path, monkeypatch, capsys):
    pack = make_pack(
        tmp_path, monkeypatch,
        "[{'id': 'k', 'name': 'N $ö', 'module': 'PACK.t', 'description': '$ref is not special here', 'tools': ["
        "{'name': 'x.lookup', 'access': 'read', 'required_capabilities': ['$schema', 'crm:écrire', '$ref']}]}]",
        {"t": TOOLS_SRC},
    )
    assert boot.main(["--export-manifest", "--packs", pack, "--image-version", "0.1.30"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == {
        "tools": [{"name": "x.lookup", "access": "read", "required_capabilities": ["$schema", "crm:écrire", "$ref"], "toolkit_id": "k", "pack": pack}],
        "image_version": "0.1.30",
    }


def test_pack_names_from_env(monkeypatch):
    monkeypatch.setenv("SVC_CHATUI_TOOL_PACKS", " acme_tools, other ,,acme_tools ")
    assert manifest.pack_names() == ["acme_tools", "other"]
    monkeypatch.delenv("SVC_CHATUI_TOOL_PACKS")
    assert manifest.pack_names() == []


def test_the_seeded_tools_class_hides_undeclared_methods():
    from misnamed_pack.tools import Tools

    narrowed = toolkit.only_declared(Tools, ["search"])
    assert manifest.public_methods(narrowed) == ["search"]
    assert issubclass(narrowed, Tools) and narrowed.__name__ == "Tools"


def test_a_failing_seed_ends_with_one_line_naming_the_error(monkeypatch, capsys):
    from svc_chatui import seed

    async def broken(toolkits):
        raise RuntimeError("database is locked\nretry later")

    monkeypatch.setattr(seed, "seed", broken)
    assert boot.main(["--seed", "--packs", ""]) == boot.EXIT_SEED_FAILED
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert err[-1] == "seed failed: RuntimeError: database is locked retry later"
