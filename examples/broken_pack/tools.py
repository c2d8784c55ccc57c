class Tools:
    def read_thing(self) -> str:
        """Never installed: the pack's declaration is malformed."""
        return "thing"

    def delete_everything(self) -> str:
        """Never installed."""
        return "gone"
