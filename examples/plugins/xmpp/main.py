"""XMPP as a LurkBot channel: a LurkBot plugin (protocol 1, docs/guide/plugins.md).

The bot's account signs in with slixmpp; each direct chat message is handed to LurkBot with
`channel.receive` (its stanza id as the message id, so a message delivered twice is answered
once), and LurkBot's replies come back as `channel.send` (sent with the outbox's key as the
stanza id). Settings come from `[plugins.xmpp]` (`jid`, `server`, `port`, `tls`) and the
password from the home's .env (XMPP_PASSWORD), the one name the manifest lists.
"""

import asyncio
import hashlib
import json
import os
import sys

import slixmpp

CHANNEL = "xmpp"


class Host:
    """Protocol 1 over stdin/stdout: one JSON object a line, requests both ways."""

    def __init__(self):
        self.next_id = 0
        self.waiting = {}

    def write(self, message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def notify(self, method, params):
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, id, result=None, error=None):
        if error is not None:
            self.write({"jsonrpc": "2.0", "id": id, "error": error})
        else:
            self.write({"jsonrpc": "2.0", "id": id, "result": result})

    async def ask(self, method, params):
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return await future

    def answered(self, message):
        future = self.waiting.pop(message.get("id"), None)
        if future is not None and not future.done():
            future.set_result(message)

    def log(self, level, text):
        asyncio.ensure_future(self.ask("host.log", {"level": level, "message": text}))


class Bot(slixmpp.ClientXMPP):
    def __init__(self, host, jid, password):
        super().__init__(jid, password)
        self.host = host
        self.add_event_handler("session_start", self.started)
        self.add_event_handler("message", self.received)
        self.add_event_handler("disconnected", self.lost)

    async def started(self, _event):
        self.send_presence()
        await self.get_roster()
        self.host.notify("channel.status", {"channel": CHANNEL, "state": "connected"})

    def lost(self, _event):
        self.host.notify("channel.status", {"channel": CHANNEL, "state": "connecting", "detail": "reconnecting to the XMPP server"})

    async def received(self, msg):
        if msg["type"] not in ("chat", "normal") or not msg["body"]:
            return
        sender = msg["from"].bare
        # The stanza's id; a client that sends none gets one from what it said.
        fallback = hashlib.sha256(f"{sender}\n{msg['body']}".encode()).hexdigest()[:16]
        params = {"channel": CHANNEL, "id": msg["id"] or fallback,
                  "chat": sender, "sender": sender, "text": msg["body"]}
        answer = await self.host.ask("channel.receive", params)
        if "error" in answer:
            self.host.log("warn", f"a message was not recorded: {answer['error'].get('message')}")


async def serve():
    host = Host()
    bot = None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=4 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    settings = {}
    while True:
        line = await reader.readline()
        if not line:
            break
        message = json.loads(line)
        method = message.get("method")
        if method is None:
            host.answered(message)
        elif method == "initialize":
            settings = message["params"].get("config") or {}
            host.answer(message["id"], {"provides": [f"channel:{CHANNEL}"]})
        elif method == "initialized":
            # Diagnostics go to stderr, which LurkBot writes to its log (stdout is protocol).
            print(f"xmpp plugin: signing in as {settings['jid']}", file=sys.stderr, flush=True)
            bot = Bot(host, settings["jid"], os.environ.get("XMPP_PASSWORD", ""))
            if not settings.get("tls", True):
                # A server on this machine without TLS (tests, a local Prosody).
                bot.enable_plaintext = True
                bot.enable_starttls = False
                bot.enable_direct_tls = False
                bot["feature_mechanisms"].unencrypted_plain = True
            port = int(settings["port"]) if "port" in settings else None
            bot.connect(host=settings.get("server"), port=port)
        elif method == "channel.send":
            params = message["params"]
            if bot is None or not bot.is_connected():
                host.answer(message["id"], error={"code": -32000, "message": "not connected to the XMPP server", "data": {"retryAfterMs": 2000}})
                continue
            stanza = bot.make_message(mto=params["chat"], mbody=params["text"], mtype="chat")
            stanza["id"] = params["key"]
            stanza.send()
            host.answer(message["id"], {"id": params["key"]})
        elif method == "shutdown":
            if bot is not None:
                bot.disconnect()
            host.answer(message["id"], {})
        elif "id" in message:
            host.answer(message["id"], error={"code": -32601, "message": f"method not found: {method}"})


if __name__ == "__main__":
    asyncio.run(serve())
