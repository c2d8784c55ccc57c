"""A malformed pack (for tests): its second tool entry has an access that is neither read nor write."""

TOOLKITS = [
    {
        "id": "broken",
        "name": "Broken",
        "module": "broken_pack.tools",
        "tools": [
            {"name": "broken.read_thing", "access": "read"},
            {"name": "broken.delete_everything", "access": "admin"},
        ],
    }
]
