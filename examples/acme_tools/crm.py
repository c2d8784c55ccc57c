"""Acme CRM tools. Each method passes exactly its declared name to the governor (rule 2)."""

from svc_chatui import governor

# A stand-in for the real CRM client.
_CUSTOMERS = {"c-1": {"id": "c-1", "name": "Ada Lovelace", "email": "ada@example.com"}}


def _lookup(customer_id: str) -> str:
    c = _CUSTOMERS.get(customer_id)
    return f"{c['name']} <{c['email']}>" if c else f"no customer {customer_id}"


def _update(customer_id: str, email: str) -> str:
    if customer_id not in _CUSTOMERS:
        raise governor.ToolError(f"no customer {customer_id}", exit_code=2)
    _CUSTOMERS[customer_id]["email"] = email
    return f"customer {customer_id} now has email {email}"


class Tools:
    async def lookup_customer(self, customer_id: str, __user__: dict = None, __event_emitter__=None, __metadata__: dict = None) -> str:
        """
        Look up a customer by id.
        :param customer_id: the customer's id, e.g. c-1
        """
        return await governor.run(
            "crm.lookup_customer",
            {"customer_id": customer_id},
            lambda: _lookup(customer_id),
            __user__=__user__,
            __event_emitter__=__event_emitter__,
            __metadata__=__metadata__,
        )

    async def update_customer(self, customer_id: str, email: str, __user__: dict = None, __event_emitter__=None, __metadata__: dict = None) -> str:
        """
        Change a customer's email address.
        :param customer_id: the customer's id
        :param email: the new email address
        """
        return await governor.run(
            "crm.update",
            {"customer_id": customer_id, "email": email},
            lambda: _update(customer_id, email),
            __user__=__user__,
            __event_emitter__=__event_emitter__,
            __metadata__=__metadata__,
        )
