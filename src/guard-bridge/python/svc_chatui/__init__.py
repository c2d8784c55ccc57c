"""svc_chatui: the parts of svc that live inside the chat front end (Open WebUI).

Standard library only; talks to the svc proxy daemon over its unix socket
($SVC_RUNTIME_SOCKET_PATH, bearer $SVC_FRONTEND_TOKEN: the credential `svc run` makes per boot).

- ``svc_chatui.pipe``      the Pipe, the front end's only model provider (function id ``svc``)
- ``svc_chatui.guard``     the ``svc_guard`` filter (active, global)
- ``svc_chatui.governor``  what a tool pack's Tools methods call for every governed action
- ``svc_chatui.manifest``  reading and validating packs' TOOLKITS declarations
- ``svc_chatui.boot``      ``python -m svc_chatui.boot --export-manifest | --seed``

A governed tool method (see docs/tool-packs.md)::

    from svc_chatui import governor

    class Tools:
        async def update_customer(self, customer_id: str, email: str,
                                  __user__: dict = None, __event_emitter__=None,
                                  __metadata__: dict = None) -> str:
            \"\"\"Change a customer's email address.\"\"\"
            return await governor.run(
                "crm.update",                                  # exactly the declared name
                {"customer_id": customer_id, "email": email},  # the audited arguments
                lambda: crm.update(customer_id, email),        # runs only on permit
                __user__=__user__, __event_emitter__=__event_emitter__, __metadata__=__metadata__,
            )

``governor.run`` returns the body's result on permit, or the refusal text for the model
(``tool_not_registered: …``, ``Refused (svc.denied): …``, ``Refused (identity.unlinked)``);
an unlinked user gets the one-time claim link as a notification only they see.
"""

__all__ = ["boot", "governor", "guard", "manifest", "pipe"]
