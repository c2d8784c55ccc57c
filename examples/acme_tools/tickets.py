"""Acme support-queue tools."""

from svc_chatui import governor

_OPEN = ["T-17 printer on fire", "T-18 password reset"]


class Tools:
    async def list_open(self, __user__: dict = None, __event_emitter__=None, __metadata__: dict = None) -> str:
        """List the open support tickets."""
        return await governor.run(
            "tickets.list_open", {}, lambda: "\n".join(_OPEN),
            __user__=__user__, __event_emitter__=__event_emitter__, __metadata__=__metadata__,
        )
