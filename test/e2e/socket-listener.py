"""Listens on Open WebUI's socket.io endpoint as one signed-in user, the way the browser does,
and prints every event the server sends to that user's sessions as one JSON line on stdout:
{"event": <name>, "data": <payload>}. Prints {"event": "connected"} once authenticated.

Run with the Open WebUI venv's Python (it ships python-socketio and aiohttp):
    python socket-listener.py <base_url> <jwt>
Stops on SIGTERM or when stdin closes.
"""

import asyncio
import json
import sys

import socketio


async def main(url: str, token: str) -> None:
    sio = socketio.AsyncClient(reconnection=False)

    def out(event: str, data) -> None:
        sys.stdout.write(json.dumps({"event": event, "data": data}) + "\n")
        sys.stdout.flush()

    @sio.on("*")
    async def any_event(event, data=None):
        out(event, data)

    @sio.event
    async def disconnect(reason=None):
        out("disconnected", {"reason": str(reason)})

    await sio.connect(url, socketio_path="/ws/socket.io", transports=["websocket"], auth={"token": token}, wait_timeout=20)
    # The browser joins its user room with user-join after connecting; do the same.
    await sio.call("user-join", {"auth": {"token": token}}, timeout=20)
    # The Socket.IO session id of the default namespace (what the browser's socket.id is, and
    # what Open WebUI keys its session pool by); sio.sid is the Engine.IO transport's id.
    out("connected", {"sid": sio.get_sid("/")})
    loop = asyncio.get_running_loop()
    # Stop when the test closes our stdin.
    await loop.run_in_executor(None, sys.stdin.read)
    await sio.disconnect()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
