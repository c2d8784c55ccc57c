"""A pack whose method passes a different name to the governor than it declares (for tests):
the boot step warns, and at run time the proxy refuses the call as tool_not_registered."""

TOOLKITS = [
    {
        "id": "misnamed",
        "name": "Misnamed",
        "module": "misnamed_pack.tools",
        "tools": [{"name": "notes.search", "access": "read"}],
    }
]
