"""Boot steps run by the supervisor (`svc run`) in the front end's Python:

    python -m svc_chatui.boot --export-manifest   print the manifest of the packs' governed tools (JSON)
    python -m svc_chatui.boot --seed              install the Pipe, svc_guard and the toolkits' tools

Packs come from SVC_CHATUI_TOOL_PACKS (comma-separated module names) or ``--packs``. Warnings
go to stderr as lines starting with "warning: ". Exit codes: 0 done, 1 a pack is broken (one
line on stderr naming the pack and the entry), 2 usage, 3 (``--seed``) no admin has signed
up yet, 4 (``--seed``) the seed failed (the traceback, then one last line
``seed failed: <error>``, which the supervisor shows when it stops the container).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback

from . import manifest

EXIT_BROKEN_PACK = 1
EXIT_NO_ADMIN = 3
EXIT_SEED_FAILED = 4


def _load(packs_arg: str | None):
    packs = manifest.pack_names(packs_arg)
    toolkits, warnings = manifest.load_toolkits(packs)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    return packs, toolkits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m svc_chatui.boot", description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--export-manifest", action="store_true", help="print the tool manifest as JSON")
    mode.add_argument("--seed", action="store_true", help="install the svc functions and the packs' tools")
    ap.add_argument("--packs", help="comma-separated pack modules (default: $SVC_CHATUI_TOOL_PACKS)")
    ap.add_argument("--image-version", help="image version to put in the manifest")
    args = ap.parse_args(argv)
    try:
        _, toolkits = _load(args.packs)
    except manifest.ManifestError as e:
        print(f"{e}; refusing to start", file=sys.stderr)
        return EXIT_BROKEN_PACK
    if args.export_manifest:
        print(json.dumps(manifest.manifest_of(toolkits, args.image_version), separators=(",", ":")))
        return 0
    from . import seed

    try:
        result = asyncio.run(seed.seed(toolkits))
    except seed.NoAdminYet as e:
        print(f"seed: {e}", file=sys.stderr)
        return EXIT_NO_ADMIN
    except Exception as e:  # Open WebUI missing, its database unusable, ...: one last line
        traceback.print_exc(file=sys.stderr)
        reason = " ".join(f"{type(e).__name__}: {e}".split())
        print(f"seed failed: {reason}", file=sys.stderr)
        return EXIT_SEED_FAILED
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
