"""A stdio JSON-RPC server that answers `initialize` with a protocol version LurkBot does not
speak (one from the future), and answers nothing else: the client must refuse it."""
import json
import sys

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("method") == "initialize" and "id" in message:
        answer = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {
                "protocolVersion": "2099-01-01",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "future", "version": "9.9"},
            },
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
