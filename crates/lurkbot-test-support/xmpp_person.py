"""A person on XMPP for the plugin tests: a slixmpp client that signs in (plain c2s on a
server on this machine), prints {"event": "ready"} once its session started and
{"event": "message", "from", "body", "id"} for each chat message it receives, and sends what
each line of stdin asks: {"to", "body", "id"} (the stanza id as given)."""

import asyncio
import json
import sys

import slixmpp


class Person(slixmpp.ClientXMPP):
    def __init__(self, jid, password):
        super().__init__(jid, password)
        self.enable_plaintext = True
        self.enable_starttls = False
        self.enable_direct_tls = False
        self["feature_mechanisms"].unencrypted_plain = True
        self.add_event_handler("session_start", self.started)
        self.add_event_handler("message", self.received)

    async def started(self, _event):
        self.send_presence()
        await self.get_roster()
        print(json.dumps({"event": "ready"}), flush=True)

    def received(self, msg):
        if msg["type"] in ("chat", "normal") and msg["body"]:
            print(json.dumps({"event": "message", "from": msg["from"].bare,
                              "body": msg["body"], "id": msg["id"]}), flush=True)


async def main(port, jid, password):
    person = Person(jid, password)
    person.connect(host="127.0.0.1", port=int(port))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        ask = json.loads(line)
        stanza = person.make_message(mto=ask["to"], mbody=ask["body"], mtype="chat")
        stanza["id"] = ask["id"]
        stanza.send()
    person.disconnect()


asyncio.run(main(*sys.argv[1:4]))
