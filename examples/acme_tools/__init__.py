"""Acme's tool pack: plain-data declarations of the governed tools (spec §2 "Tool declaration").

This module is plain data and never imports svc_chatui (rule 1); the Tools classes live in the
modules each toolkit names. Layer it into the image and set SVC_CHATUI_TOOL_PACKS=acme_tools.
"""

TOOLKITS = [
    {
        "id": "acme_crm",
        "name": "Acme CRM",
        "module": "acme_tools.crm",
        "description": "Look up and update Acme customers",
        "source": "https://example.com/acme/crm",
        "tools": [
            {"name": "crm.lookup_customer", "access": "read"},
            # The method name differs from the last part of the name: `method` says which (image v0.1.3+).
            {"name": "crm.update", "access": "write", "method": "update_customer", "required_capabilities": ["crm:write"]},
        ],
    },
    {
        "id": "acme_tickets",
        "name": "Acme tickets",
        "module": "acme_tools.tickets",
        "description": "Read the support queue",
        "tools": [
            {"name": "tickets.list_open", "access": "read"},
        ],
    },
]
