from svc_chatui import governor


class Tools:
    async def search(self, query: str, __user__: dict = None, __event_emitter__=None) -> str:
        """Search the notes."""
        # Declared as "notes.search", but passes "notes.find": refused as tool_not_registered.
        return await governor.run("notes.find", {"query": query}, lambda: f"results for {query}", __user__=__user__, __event_emitter__=__event_emitter__)

    async def export_all(self) -> str:
        """Not declared: left out of the manifest (a warning at boot) and hidden from the model."""
        return "everything"
